//! The action model the fuzz targets and the tests share: one step of a
//! fuzzed session ([`Action`]), the inputs it picks from, and how an edit
//! action applies to a document. Peer and position fields are reduced
//! modulo what exists, so every input means something.

use arbitrary::{Arbitrary, Unstructured};
use weft::{Attributes, Doc, Error, ExpandType, StyleConfig, Text, Unit, Value};

use crate::RefDoc;

/// Texts an insert picks from: ASCII, accents, CJK, emoji (astral, and a
/// flag made of two astral chars), a newline.
pub const TEXTS: &[&str] = &[
    "a", "bc", "xyz ", "é", "文字", "😀", "🇺🇸", "\n", "ß", "Hello",
];

/// Style keys a mark picks from: every expand rule, overlapping comments.
pub const KEYS: &[&str] = &[
    "bold",
    "italic",
    "link",
    "before",
    "both",
    "none",
    "comment:1",
    "comment:2",
];

/// The unit a position is given in.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum PosUnit {
    /// Chars.
    Char,
    /// UTF-8 bytes.
    Utf8,
    /// UTF-16 units.
    Utf16,
}

impl PosUnit {
    pub(crate) fn unit(self) -> Unit {
        match self {
            PosUnit::Char => Unit::Char,
            PosUnit::Utf8 => Unit::Utf8,
            PosUnit::Utf16 => Unit::Utf16,
        }
    }
}

/// One step of a fuzzed session. Peer and position fields are reduced
/// modulo what exists.
#[derive(Debug, Clone, Arbitrary)]
pub enum Action {
    /// Peer `peer` inserts `TEXTS[text]` at `pos`.
    Insert {
        /// Which peer.
        peer: u8,
        /// Position (modulo length + 1).
        pos: u16,
        /// Unit of `pos`.
        unit: PosUnit,
        /// Index into [`TEXTS`].
        text: u8,
    },
    /// Peer `peer` deletes `len` at `pos`.
    Delete {
        /// Which peer.
        peer: u8,
        /// Position (modulo length).
        pos: u16,
        /// Length (clamped to the end).
        len: u8,
        /// Unit of `pos` and `len`.
        unit: PosUnit,
    },
    /// Peer `peer` marks `len` at `pos` with `KEYS[key]` = a value.
    Mark {
        /// Which peer.
        peer: u8,
        /// Start (modulo length).
        pos: u16,
        /// Length (at least 1, clamped).
        len: u8,
        /// Unit of the range.
        unit: PosUnit,
        /// Index into [`KEYS`].
        key: u8,
        /// Picks the value (`true`, `false`, 1, "a").
        value: u8,
    },
    /// Peer `peer` unmarks `len` at `pos` for `KEYS[key]`.
    Unmark {
        /// Which peer.
        peer: u8,
        /// Start (modulo length).
        pos: u16,
        /// Length (at least 1, clamped).
        len: u8,
        /// Unit of the range.
        unit: PosUnit,
        /// Index into [`KEYS`].
        key: u8,
    },
    /// Peer `peer` commits.
    Commit {
        /// Which peer.
        peer: u8,
    },
    /// Peer `to` imports what it lacks from peer `from`.
    Sync {
        /// Exporting peer.
        from: u8,
        /// Importing peer.
        to: u8,
    },
    /// Every peer imports from every other.
    SyncAll,
    /// Peer `peer` is replaced by a fresh document that imported its full
    /// history (the round trip a snapshot will also take).
    Reimport {
        /// Which peer.
        peer: u8,
    },
    /// Peer `to` is replaced by a fork of peer `from` (with a new id).
    Fork {
        /// Peer forked.
        from: u8,
        /// Peer replaced.
        to: u8,
    },
    /// Peer `peer` is replaced by a fresh document that imported its
    /// snapshot (lazily: later actions load it); the snapshot must read
    /// the same at once and re-export byte for byte.
    Snapshot {
        /// Which peer.
        peer: u8,
    },
    /// Peer `to` merges peer `from`'s snapshot (as an update when `to`
    /// is not empty).
    SyncSnapshot {
        /// Exporting peer.
        from: u8,
        /// Importing peer.
        to: u8,
    },
    /// Peer `from` puts an export for peer `to` on the network, where it
    /// waits until an [`Action::Deliver`] (or the end of the run).
    Send {
        /// Exporting peer.
        from: u8,
        /// Receiving peer.
        to: u8,
        /// What is exported.
        payload: Payload,
    },
    /// The network delivers one waiting message (any of them: deliveries
    /// reorder), leaving a copy behind when `duplicate` (it arrives
    /// again later).
    Deliver {
        /// Which waiting message (modulo how many wait).
        index: u8,
        /// Whether a copy stays on the network.
        duplicate: bool,
    },
    /// Peer `to` receives a damaged export of peer `from` (cut short,
    /// checksum recomputed so the decoder sees it): the import must fail
    /// and change nothing, and the peer goes on working.
    Corrupt {
        /// Exporting peer.
        from: u8,
        /// Receiving peer.
        to: u8,
        /// Where the body is cut (modulo its length).
        cut: u16,
        /// A snapshot instead of an update.
        snapshot: bool,
    },
    /// Peer `peer` writes key `MAP_KEYS[key]` of map "m" (of map "n" when
    /// the high bit of `key` is set): a value picked by `value`, or a
    /// delete.
    MapSet {
        /// Which peer.
        peer: u8,
        /// Index into [`MAP_KEYS`].
        key: u8,
        /// 0: delete; else the value `value % 4`.
        value: u8,
    },
    /// Peer `peer` inserts an embed of the value `value` at char `pos`.
    Embed {
        /// Which peer.
        peer: u8,
        /// Position (modulo length + 1).
        pos: u16,
        /// The embedded value.
        value: u8,
    },
    /// Peer `peer` edits blocks at char `pos`: on a block marker, sets
    /// its attributes (`op` even) or joins it (`op` odd); elsewhere splits
    /// a block there. Attributes come from `op` (see [`block_attrs`]).
    Block {
        /// Which peer.
        peer: u8,
        /// Position (modulo length + 1).
        pos: u16,
        /// What to do, and which attributes.
        op: u8,
    },
    /// Peer `peer` deletes map "m" (`map`) or text "t" (see
    /// [`Doc::delete_text`]); later edits start them over.
    DeleteContainer {
        /// Which peer.
        peer: u8,
        /// The map instead of the text.
        map: bool,
    },
    /// Peer `peer`'s undo manager undoes its last step (an exact undo:
    /// cancels and deletes by id, map values written back).
    Undo {
        /// Which peer.
        peer: u8,
    },
    /// Peer `peer`'s undo manager redoes its last undone step.
    Redo {
        /// Which peer.
        peer: u8,
    },
    /// Peer `peer` reverts its own ops `from..from + len` (counters,
    /// reduced to those it made) with `Doc::revert_ops`, wherever they
    /// fall: inside insert runs, a mark's start without its end.
    Revert {
        /// Which peer.
        peer: u8,
        /// First counter (modulo the peer's ops).
        from: u16,
        /// Number of ops (`1 + len % 8`, clamped).
        len: u8,
    },
}

/// The block attributes an [`Action::Block`] with `op` writes: one of two
/// keys, set to one of three values or removed (few, so that writes
/// race), and with bit 4 of `op` a second key, "align", likewise.
pub fn block_attrs(op: u8) -> Vec<(&'static str, Value)> {
    let value = |v: u8| match v % 4 {
        0 => Value::Null,
        v => Value::from(i64::from(v)),
    };
    let key = ["header", "list"][usize::from(op >> 1) % 2];
    let mut out = vec![(key, value(op >> 2))];
    if op & 0x10 != 0 {
        out.push(("align", value(op >> 5)));
    }
    out
}

/// The keys map writes use (few, so that writes race).
pub const MAP_KEYS: [&str; 3] = ["a", "b", "c"];

/// What an [`Action::Send`] exports, as real sync layers do.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Payload {
    /// What the receiver lacks now.
    Delta,
    /// The whole history (re-sent on every reconnect by simple layers).
    Whole,
    /// Everything since a version the receiver had earlier (a stale
    /// acknowledgement): ops it has are sent again. With the high bit
    /// set, op ranges from that version instead, some cut further at
    /// places no peer's version was (what follows a cut waits).
    Stale(u8),
    /// Everything since a version ahead of the receiver's (one peer's
    /// counter raised): ops it lacks are left out, so what is sent waits.
    Future(u8),
    /// Everything since the receiver's version plus a peer nobody knows.
    UnknownPeer,
    /// A snapshot of the sender.
    Snapshot,
}

/// The style config every fuzzed document uses.
pub fn config() -> StyleConfig {
    let mut c = StyleConfig::default();
    c.set("before", ExpandType::Before)
        .set("both", ExpandType::Both)
        .set("none", ExpandType::None);
    c
}

pub(crate) fn new_doc(peer: u64) -> Doc {
    let mut d = Doc::new();
    d.set_peer_id(peer).expect("fuzz peer ids are valid");
    d.config_text_style(config());
    d
}

/// Errors an action may legitimately cause: a position inside a char.
/// Whether the action was done.
pub(crate) fn allowed(r: Result<(), Error>) -> bool {
    match r {
        Ok(()) => true,
        Err(Error::NotCharBoundary { .. }) => false,
        Err(e) => panic!("unexpected error {e:?}"),
    }
}

pub(crate) fn value(v: u8) -> Value {
    match v % 4 {
        0 => true.into(),
        1 => false.into(),
        2 => 1.into(),
        _ => "a".into(),
    }
}

/// `text.insert*` in `unit`.
pub(crate) fn insert_in(
    text: &mut Text<'_>,
    unit: PosUnit,
    pos: usize,
    s: &str,
) -> Result<(), Error> {
    match unit {
        PosUnit::Char => text.insert(pos, s),
        PosUnit::Utf8 => text.insert_utf8(pos, s),
        PosUnit::Utf16 => text.insert_utf16(pos, s),
    }
}

/// `text.delete*` in `unit`.
pub(crate) fn delete_in(
    text: &mut Text<'_>,
    unit: PosUnit,
    pos: usize,
    n: usize,
) -> Result<(), Error> {
    match unit {
        PosUnit::Char => text.delete(pos, n),
        PosUnit::Utf8 => text.delete_utf8(pos, n),
        PosUnit::Utf16 => text.delete_utf16(pos, n),
    }
}

/// An edit Weft accepted, in chars: what the reference model must do.
pub(crate) enum ModelEdit {
    Insert(usize, &'static str),
    Embed(usize, Value),
    Delete(usize, usize),
    Mark(std::ops::Range<usize>, &'static str, Value),
    SplitBlock(usize, Attributes),
    UpdateBlock(usize, Attributes),
    MapSet(&'static str, &'static str, Option<Value>),
    DeleteText,
    DeleteMap,
}

impl ModelEdit {
    /// Makes the edit on `model`, which holds what the document held.
    pub(crate) fn apply(self, model: &mut RefDoc) {
        match self {
            ModelEdit::Insert(pos, s) => model.insert(pos, s),
            ModelEdit::Embed(pos, v) => model.insert_embed(pos, v),
            ModelEdit::Delete(pos, n) => model.delete(pos, n),
            ModelEdit::Mark(range, key, v) => model.mark(range, key, v),
            ModelEdit::SplitBlock(pos, a) => model.split_block(pos, a),
            ModelEdit::UpdateBlock(pos, a) => model.update_block(pos, a),
            ModelEdit::MapSet(map, key, v) => model.map_set(map, key, v),
            ModelEdit::DeleteText => model.delete_text(),
            ModelEdit::DeleteMap => model.delete_map("m"),
        }
    }
}

/// Applies an edit action to `doc` (other actions are ignored); returns
/// the same edit in chars when Weft accepted it.
pub(crate) fn edit(doc: &mut Doc, action: &Action) -> Option<ModelEdit> {
    if let Action::DeleteContainer { map, .. } = *action {
        if map {
            doc.map("m");
            return allowed(doc.delete_map("m")).then_some(ModelEdit::DeleteMap);
        }
        doc.text("t");
        return allowed(doc.delete_text("t")).then_some(ModelEdit::DeleteText);
    }
    if let Action::MapSet { key, value, .. } = *action {
        let name = if key & 0x80 == 0 { "m" } else { "n" };
        let mut map = doc.map(name);
        let key = MAP_KEYS[usize::from(key & 0x7F) % MAP_KEYS.len()];
        let value = (value != 0).then(|| Value::from(i64::from(value % 4)));
        let done = match &value {
            Some(v) => map.set(key, v.clone()),
            None => map.delete(key),
        };
        return allowed(done).then_some(ModelEdit::MapSet(name, key, value));
    }
    let mut text = doc.text("t");
    if let Action::Embed { pos, value, .. } = *action {
        let pos = pos as usize % (text.len() + 1);
        let done = allowed(text.insert_embed(pos, i64::from(value)));
        return done.then(|| ModelEdit::Embed(pos, Value::from(i64::from(value))));
    }
    if let Action::Block { pos, op, .. } = *action {
        let pos = pos as usize % (text.len() + 1);
        let marker = pos < text.len() && matches!(text.block_at(pos), Ok(Some(_)));
        let attrs: Attributes = block_attrs(op)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        return match (marker, op % 2) {
            (true, 0) => allowed(text.update_block(pos, block_attrs(op)))
                .then_some(ModelEdit::UpdateBlock(pos, attrs)),
            (true, _) => allowed(text.join_block(pos)).then_some(ModelEdit::Delete(pos, 1)),
            (false, _) => allowed(text.split_block(pos, block_attrs(op)))
                .then_some(ModelEdit::SplitBlock(pos, attrs)),
        };
    }
    // Where a position in `unit` falls in chars (before the edit), if it
    // is a char boundary.
    let chars = |text: &Text<'_>, unit: PosUnit, pos: usize| {
        text.convert_pos(pos, unit.unit(), Unit::Char).ok()
    };
    match *action {
        Action::Insert {
            pos, unit, text: t, ..
        } => {
            let s = TEXTS[t as usize % TEXTS.len()];
            let len = len_in(&text, unit.unit());
            let pos = pos as usize % (len + 1);
            let at = chars(&text, unit, pos);
            allowed(insert_in(&mut text, unit, pos, s))
                .then(|| ModelEdit::Insert(at.expect("an accepted insert is at a boundary"), s))
        }
        Action::Delete { pos, len, unit, .. } => {
            let total = len_in(&text, unit.unit());
            if total == 0 {
                return None;
            }
            let pos = pos as usize % total;
            let n = (len as usize).min(total - pos);
            let range = chars(&text, unit, pos).zip(chars(&text, unit, pos + n));
            allowed(delete_in(&mut text, unit, pos, n)).then(|| {
                let (a, b) = range.expect("an accepted delete is between boundaries");
                ModelEdit::Delete(a, b - a)
            })
        }
        Action::Mark {
            pos,
            len,
            unit,
            key,
            value: v,
            ..
        } => {
            let range = range_in(&text, unit.unit(), pos, len)?;
            let key = KEYS[key as usize % KEYS.len()];
            let at = chars(&text, unit, range.start).zip(chars(&text, unit, range.end));
            let done = match unit {
                PosUnit::Char => text.mark(range, key, value(v)),
                PosUnit::Utf8 => text.mark_utf8(range, key, value(v)),
                PosUnit::Utf16 => text.mark_utf16(range, key, value(v)),
            };
            allowed(done).then(|| {
                let (a, b) = at.expect("an accepted mark is between boundaries");
                ModelEdit::Mark(a..b, key, value(v))
            })
        }
        Action::Unmark {
            pos,
            len,
            unit,
            key,
            ..
        } => {
            let range = range_in(&text, unit.unit(), pos, len)?;
            let key = KEYS[key as usize % KEYS.len()];
            let at = chars(&text, unit, range.start).zip(chars(&text, unit, range.end));
            let done = match unit {
                PosUnit::Char => text.unmark(range, key),
                PosUnit::Utf8 => text.unmark_utf8(range, key),
                PosUnit::Utf16 => text.unmark_utf16(range, key),
            };
            allowed(done).then(|| {
                let (a, b) = at.expect("an accepted unmark is between boundaries");
                ModelEdit::Mark(a..b, key, Value::Null)
            })
        }
        _ => None,
    }
}

pub(crate) fn len_in(text: &Text<'_>, unit: Unit) -> usize {
    match unit {
        Unit::Char => text.len(),
        Unit::Utf8 => text.len_utf8(),
        Unit::Utf16 => text.len_utf16(),
    }
}

pub(crate) fn range_in(
    text: &Text<'_>,
    unit: Unit,
    pos: u16,
    len: u8,
) -> Option<std::ops::Range<usize>> {
    let total = len_in(text, unit);
    if total == 0 {
        return None;
    }
    let start = pos as usize % total;
    let end = start + (len as usize).clamp(1, total - start);
    Some(start..end)
}

/// Builds a value of `T` from fuzz bytes, as the targets do.
pub fn from_bytes<'a, T: Arbitrary<'a>>(data: &'a [u8]) -> Option<T> {
    T::arbitrary_take_rest(Unstructured::new(data)).ok()
}

/// The actions `len` random bytes from `seed` make, one after another
/// until the bytes run out (a `Vec`'s own `Arbitrary` stops early on
/// random bytes): the fuzz model on a fixed seed.
pub fn random_actions(seed: u64, len: usize) -> Vec<Action> {
    let mut rng = crate::Rng::new(seed);
    let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    let mut u = Unstructured::new(&bytes);
    let mut actions = Vec::new();
    while !u.is_empty() {
        match Action::arbitrary(&mut u) {
            Ok(a) => actions.push(a),
            Err(_) => break,
        }
    }
    actions
}
