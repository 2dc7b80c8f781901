//! The reference model: a naive FugueMax list with Peritext-style marks,
//! block markers and maps, one element per char, linear scans everywhere.
//!
//! It holds one text, "t", and any number of maps; deleting "t" or a map
//! (as `Doc::delete_text` / `delete_map` do) writes the name of its next
//! incarnation in a register map, and each text op names the incarnation
//! it went to: the incarnation shown is in `items`, the others wait in
//! `hidden`.
//!
//! Cancels (undo and redo) are computed by their naive definition in
//! [`cancel`].

mod cancel;

pub use cancel::MapsBack;

use std::collections::{BTreeMap, HashMap, HashSet};

use weft::{Attributes, Delta, ExpandType, Value};

type Id = (u64, u32);

/// A style anchor of the reference model.
#[derive(Clone, Copy, Debug, PartialEq)]
struct RefAnchor {
    /// Id of the mark's start op.
    mark: Id,
    end: bool,
    sticks_left: bool,
}

#[derive(Clone, Debug)]
struct RefItem {
    id: Id,
    /// `None` for an anchor.
    ch: Option<char>,
    anchor: Option<RefAnchor>,
    left: Option<Id>,
    right: Option<Id>,
    deleted: bool,
    /// A block marker's attributes when inserted.
    block: Option<Attributes>,
    /// An embed's value.
    embed: Option<Value>,
}

impl RefItem {
    fn is_char(&self) -> bool {
        self.anchor.is_none()
    }

    fn visible(&self) -> bool {
        self.is_char() && !self.deleted
    }
}

/// What a mark sets.
#[derive(Clone, Debug)]
struct RefMark {
    key: String,
    value: Value,
    lamport: u32,
    peer: u64,
}

#[derive(Clone, Debug)]
enum RefOp {
    Insert {
        id: Id,
        /// The incarnation of "t" it went to.
        text: String,
        ch: char,
        left: Option<Id>,
        right: Option<Id>,
        /// Set for a block marker.
        block: Option<Attributes>,
        /// Set for an embed.
        embed: Option<Value>,
    },
    Delete {
        id: Id,
        text: String,
        target: Id,
    },
    Anchor {
        id: Id,
        text: String,
        anchor: RefAnchor,
        left: Option<Id>,
        right: Option<Id>,
        /// Set on start anchors.
        mark: Option<RefMark>,
    },
    /// The first of the two ops of a block attribute write (Weft's mark
    /// start): no effect.
    BlockStart {
        id: Id,
    },
    /// Sets `key` of block marker `target` (`Null` removes it).
    BlockSet {
        id: Id,
        target: Id,
        key: String,
        value: Value,
    },
    /// A map write (`None` deletes the key).
    MapSet {
        id: Id,
        map: String,
        key: String,
        value: Option<Value>,
        /// For a local write of a public map, the value the key had
        /// before (what an undo manager writes back).
        before: Option<Option<Value>>,
    },
    /// Cancels op `target` (an earlier delete, mark start or cancel of
    /// the same peer).
    Cancel {
        id: Id,
        target: Id,
    },
}

impl RefOp {
    fn id(&self) -> Id {
        match self {
            RefOp::Insert { id, .. }
            | RefOp::Delete { id, .. }
            | RefOp::Anchor { id, .. }
            | RefOp::BlockStart { id }
            | RefOp::BlockSet { id, .. }
            | RefOp::MapSet { id, .. }
            | RefOp::Cancel { id, .. } => *id,
        }
    }
}

/// The styles in force while walking the items in order: the marks
/// active, per key the one that wins (the greatest (Lamport, peer)),
/// updated as anchors pass, and the attributes they make, recomputed
/// only when a winner changes.
#[derive(Default)]
struct Styles<'a> {
    active: Vec<(Id, &'a RefMark)>,
    winners: BTreeMap<&'a str, (Id, &'a RefMark)>,
    attributes: Option<Attributes>,
}

impl<'a> Styles<'a> {
    /// Walks past anchor `a`.
    fn pass(&mut self, doc: &'a RefDoc, a: RefAnchor) {
        let order = |m: &RefMark| (m.lamport, m.peer);
        if a.end {
            let Some(k) = self.active.iter().position(|e| e.0 == a.mark) else {
                return;
            };
            let (_, mark) = self.active.remove(k);
            let key = mark.key.as_str();
            if self.winners.get(key).is_some_and(|w| w.0 == a.mark) {
                match self
                    .active
                    .iter()
                    .filter(|e| e.1.key == key)
                    .max_by_key(|e| order(e.1))
                {
                    Some(&w) => self.winners.insert(key, w),
                    None => self.winners.remove(key),
                };
                self.attributes = None;
            }
        } else if doc.live(a.mark) {
            let mark = &doc.marks[&a.mark];
            self.active.push((a.mark, mark));
            let key = mark.key.as_str();
            if self
                .winners
                .get(key)
                .is_none_or(|w| order(mark) > order(w.1))
            {
                self.winners.insert(key, (a.mark, mark));
                self.attributes = None;
            }
        }
    }

    /// The styles in force here.
    fn get(&mut self) -> &Attributes {
        self.attributes.get_or_insert_with(|| {
            self.winners
                .iter()
                .filter(|(_, (_, m))| !m.value.is_null())
                .map(|(k, (_, m))| ((*k).to_owned(), m.value.clone()))
                .collect()
        })
    }
}

/// A block attribute write: (Lamport, peer, key, value, id of the
/// write's first op, the mark start a cancel names).
type BlockWrite = (u32, u64, String, Value, Id);

/// A map of the reference model: key -> (Lamport, peer, value) of the
/// greatest write.
type RefMap = BTreeMap<String, (u32, u64, Option<Value>)>;

/// The expand rules the randomized tests configure: Weft's defaults plus
/// `before`, `both`, `none`, `after`.
pub fn expand_of(key: &str) -> ExpandType {
    let base = key.split(':').next().unwrap_or(key);
    match base {
        "link" | "comment" | "code" | "none" => ExpandType::None,
        "before" => ExpandType::Before,
        "both" => ExpandType::Both,
        _ => ExpandType::After,
    }
}

/// A naive FugueMax list: one element per char in a `Vec`, linear scans
/// everywhere. Ids are assigned exactly as Weft assigns them (one counter
/// per inserted or deleted char), so both must produce the same text.
#[derive(Clone, Debug, Default)]
pub struct RefDoc {
    /// The peer whose local ops this replica makes.
    pub peer: u64,
    items: Vec<RefItem>,
    log: Vec<(RefOp, u32)>,
    next: HashMap<u64, u32>,
    marks: HashMap<Id, RefMark>,
    /// Largest Lamport timestamp known, plus one.
    next_lamport: u32,
    maps: BTreeMap<String, RefMap>,
    /// Per block marker, its attribute writes.
    block_sets: HashMap<Id, Vec<BlockWrite>>,
    /// Marks whose end anchor arrived (a start without its end styles
    /// nothing).
    ended: HashSet<Id>,
    /// The incarnation of "t" in `items` ("" for "t" itself).
    shown: String,
    /// The other incarnations of "t".
    hidden: HashMap<String, Vec<RefItem>>,
    /// Per char, the delete ops of it.
    deleters: HashMap<Id, Vec<Id>>,
    /// Per op, the cancel ops of it.
    cancels: HashMap<Id, Vec<Id>>,
    /// A peer whose ops count as never made (see [`RefDoc::with_ghost`]).
    ghost: Option<u64>,
}

/// The registers of deleted texts and maps, as Weft keeps them.
const TEXT_REGISTER: &str = "\u{1}t";
const MAP_REGISTER: &str = "\u{1}m";

/// The incarnation `value` (the register's value for `name`) names.
fn incarnation(name: &str, value: Option<&Value>) -> String {
    match value {
        None => name.to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => panic!("the model writes strings, not {v:?}"),
    }
}

/// The name incarnation `raw` shows under.
fn public(raw: &str) -> &str {
    raw.strip_prefix('\u{1}')
        .and_then(|r| r.split_once('\u{1}'))
        .map_or(raw, |(_, n)| n)
}

impl RefDoc {
    /// An empty replica editing as `peer`.
    pub fn new(peer: u64) -> Self {
        RefDoc {
            peer,
            ..Default::default()
        }
    }

    /// The visible text.
    pub fn text(&self) -> String {
        self.items
            .iter()
            .filter(|i| i.visible())
            .filter_map(|i| i.ch)
            .collect()
    }

    /// The visible length in chars.
    pub fn len(&self) -> usize {
        self.items.iter().filter(|i| i.visible()).count()
    }

    /// Whether no char is visible.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id of visible char `pos` (< len).
    pub fn char_id(&self, pos: usize) -> Id {
        self.items
            .iter()
            .filter(|i| i.visible())
            .nth(pos)
            .expect("pos < len")
            .id
    }

    /// Where a cursor sticking to char `id` resolves: its visible
    /// position, plus one if the cursor is after it (`after_char`) and the
    /// char is visible; `None` if this replica does not have the char.
    pub fn cursor_pos(&self, id: Id, after_char: bool) -> Option<usize> {
        let at = self.items.iter().position(|i| i.id == id && i.is_char())?;
        let before = self.items[..at].iter().filter(|i| i.visible()).count();
        Some(before + usize::from(after_char && self.items[at].visible()))
    }

    /// Per peer, the number of ops known.
    pub fn version(&self) -> Vec<(u64, u32)> {
        let mut v: Vec<_> = self
            .next
            .iter()
            .map(|(&p, &c)| (p, c))
            .filter(|e| e.1 > 0)
            .collect();
        v.sort();
        v
    }

    fn knows(&self, id: Id) -> bool {
        self.next.get(&id.0).is_some_and(|&c| id.1 < c)
    }

    fn index_of(&self, id: Id) -> usize {
        self.items
            .iter()
            .position(|i| i.id == id)
            .expect("known id")
    }

    fn visible_index(&self, pos: usize) -> usize {
        self.items
            .iter()
            .enumerate()
            .filter(|(_, i)| i.visible())
            .nth(pos)
            .map(|(k, _)| k)
            .expect("pos in bounds")
    }

    fn next_id(&self) -> Id {
        (self.peer, self.next.get(&self.peer).copied().unwrap_or(0))
    }

    /// Where text typed at visible `pos` goes, as Weft decides it: the
    /// entity index, the left origin, and the marks without text that no
    /// place avoids. By default right after the visible char before it and
    /// its left-sticky anchors; when that is inside a mark whose anchors
    /// are both in the gap up to the next visible char, the first place
    /// after a deleted char that is inside no such mark and inside the same
    /// other marks.
    fn insert_place(&self, pos: usize) -> (usize, Option<Id>, Vec<Id>) {
        let x = pos.checked_sub(1).map(|p| self.visible_index(p));
        let start = x.map_or(0, |i| i + 1);
        let end = self.items[start..]
            .iter()
            .position(|i| i.visible())
            .map_or(self.items.len(), |k| start + k);
        let gap = &self.items[start..end];
        let sticks_left = |i: &RefItem| i.anchor.is_some_and(|a| a.sticks_left);
        let after = |from: usize| from + gap[from..].iter().take_while(|i| sticks_left(i)).count();
        let default = after(0);
        let x_id = x.map(|i| self.items[i].id);
        let mut marks: Vec<(Id, Option<usize>, Option<usize>)> = Vec::new();
        for (k, it) in gap.iter().enumerate() {
            if let Some(a) = it.anchor {
                let pos = match marks.iter().position(|m| m.0 == a.mark) {
                    Some(p) => p,
                    None => {
                        marks.push((a.mark, None, None));
                        marks.len() - 1
                    }
                };
                if a.end {
                    marks[pos].2 = Some(k);
                } else {
                    marks[pos].1 = Some(k);
                }
            }
        }
        let covers = |m: &(Id, Option<usize>, Option<usize>), p: usize| {
            m.1.is_none_or(|s| s < p) && m.2.is_none_or(|e| e >= p)
        };
        let dead = |m: &(Id, Option<usize>, Option<usize>)| m.1.is_some() && m.2.is_some();
        if !marks.iter().any(|m| dead(m) && covers(m, default)) {
            return (start + default, x_id, Vec::new());
        }
        for (k, it) in gap.iter().enumerate() {
            if it.anchor.is_some() {
                continue;
            }
            let p = after(k + 1);
            let ok = marks.iter().all(|m| {
                if dead(m) {
                    !covers(m, p)
                } else {
                    covers(m, p) == covers(m, default)
                }
            });
            if ok {
                return (start + p, Some(it.id), Vec::new());
            }
        }
        let stuck = marks
            .iter()
            .filter(|m| dead(m) && covers(m, default))
            .map(|m| m.0)
            .collect();
        (start + default, x_id, stuck)
    }

    /// Inserts `s` at char `pos` as a local op.
    pub fn insert(&mut self, pos: usize, s: &str) {
        self.insert_with(pos, s, None, None);
    }

    /// Inserts an embed of `value` at visible `pos` (one char, U+FFFC, in
    /// the text).
    pub fn insert_embed(&mut self, pos: usize, value: Value) {
        self.insert_with(pos, "\u{FFFC}", None, Some(value));
    }

    /// Inserts a block marker with `attributes` at visible `pos`.
    pub fn split_block(&mut self, pos: usize, mut attributes: Attributes) {
        attributes.retain(|_, v| !v.is_null());
        self.insert_with(pos, "\u{FFFC}", Some(attributes), None);
    }

    /// The attributes of block marker `item`: its base, then per key the
    /// greatest write whose first op (a mark start) is not cancelled.
    fn block_attributes(&self, item: &RefItem) -> Option<Attributes> {
        let mut out = item.block.clone()?;
        let mut greatest: BTreeMap<&str, (u32, u64, &Value)> = BTreeMap::new();
        for (lamport, peer, key, value, start) in
            self.block_sets.get(&item.id).into_iter().flatten()
        {
            if self.is_cancelled(*start) {
                continue;
            }
            let e = greatest.entry(key).or_insert((0, 0, value));
            if (*lamport, *peer) >= (e.0, e.1) {
                *e = (*lamport, *peer, value);
            }
        }
        for (k, (_, _, v)) in greatest {
            if v.is_null() {
                out.remove(k);
            } else {
                out.insert(k.to_owned(), v.clone());
            }
        }
        Some(out)
    }

    /// The attributes of the block marker at visible `pos`, if it is one.
    pub fn block_at(&self, pos: usize) -> Option<Attributes> {
        self.block_attributes(&self.items[self.visible_index(pos)])
    }

    /// Sets attributes of the block marker at visible `pos` as Weft does:
    /// for each key whose value changes, two ops (Weft's mark start and
    /// end), the second of which writes.
    pub fn update_block(&mut self, pos: usize, attributes: Attributes) {
        let current = self.block_at(pos).expect("a block marker");
        let target = self.char_id(pos);
        for (key, value) in attributes {
            let same = match current.get(&key) {
                Some(old) => *old == value,
                None => value.is_null(),
            };
            if same {
                continue;
            }
            let id = self.next_id();
            self.apply(RefOp::BlockStart { id });
            let id = self.next_id();
            self.apply(RefOp::BlockSet {
                id,
                target,
                key,
                value,
            });
        }
    }

    fn insert_with(
        &mut self,
        pos: usize,
        s: &str,
        block: Option<Attributes>,
        embed: Option<Value>,
    ) {
        let (at, left0, stuck) = self.insert_place(pos);
        // Origins are chars: the chosen left char and the next char
        // (visible or not) after the place; later chars follow the first.
        let right = self.items[at..].iter().find(|i| i.is_char()).map(|i| i.id);
        let mut left = left0;
        for ch in s.chars() {
            let id = self.next_id();
            let text = self.shown_name();
            self.apply(RefOp::Insert {
                id,
                text,
                ch,
                left,
                right,
                block: block.clone(),
                embed: embed.clone(),
            });
            left = Some(id);
        }
        // Marks without text that no place avoided: unmark the new text
        // (a block marker too: styles do not show on it, but a mark over
        // it would have text again) where one of them is what styles it.
        let n = s.chars().count();
        let mut keys: Vec<String> = Vec::new();
        for m in &stuck {
            let key = self.marks[m].key.clone();
            if self
                .winner_at(pos, &key)
                .is_some_and(|w| stuck.contains(&w))
                && !keys.contains(&key)
            {
                keys.push(key);
            }
        }
        for key in keys {
            self.mark(pos..pos + n, &key, Value::Null);
        }
    }

    /// The mark that wins on `key` at visible char `pos`.
    fn winner_at(&self, pos: usize, key: &str) -> Option<Id> {
        let at = self.visible_index(pos);
        self.active_before(at)
            .into_iter()
            .filter(|m| self.marks[m].key == key)
            .max_by_key(|m| (self.marks[m].lamport, self.marks[m].peer))
    }

    /// Deletes `len` chars at char `pos` as a local op.
    pub fn delete(&mut self, pos: usize, len: usize) {
        // Op k deletes the k-th char of the range, in document order.
        let targets: Vec<Id> = self
            .items
            .iter()
            .filter(|i| i.visible())
            .skip(pos)
            .take(len)
            .map(|i| i.id)
            .collect();
        for target in targets {
            let id = self.next_id();
            let text = self.shown_name();
            self.apply(RefOp::Delete { id, text, target });
        }
    }

    /// Marks visible chars `range` with `key` = `value` (a null value
    /// unmarks), as Weft does: nothing when redundant, else a start and an
    /// end anchor whose origins are the non-anchor neighbours.
    pub fn mark(&mut self, range: std::ops::Range<usize>, key: &str, value: Value) {
        let redundant = self
            .attributes_in(range.clone())
            .iter()
            .all(|a| match a.get(key) {
                Some(v) => *v == value,
                None => value.is_null(),
            });
        if redundant {
            return;
        }
        let expand = expand_of(key);
        let start = self.next_id();
        for end in [false, true] {
            let sticks_left = if end {
                !matches!(expand, ExpandType::After | ExpandType::Both)
            } else {
                matches!(expand, ExpandType::Before | ExpandType::Both)
            };
            let pos = if end { range.end } else { range.start };
            // Glued to the visible char before (sticking left) or after.
            let (left, right) = if sticks_left {
                let glue = pos
                    .checked_sub(1)
                    .map(|p| self.items[self.visible_index(p)].id);
                (glue, None)
            } else {
                let glue = (pos < self.len()).then(|| self.items[self.visible_index(pos)].id);
                (None, glue)
            };
            let id = self.next_id();
            let mark = (!end).then(|| RefMark {
                key: key.to_owned(),
                value: value.clone(),
                lamport: self.next_lamport,
                peer: self.peer,
            });
            let text = self.shown_name();
            self.apply(RefOp::Anchor {
                id,
                text,
                anchor: RefAnchor {
                    mark: start,
                    end,
                    sticks_left,
                },
                left,
                right,
                mark,
            });
        }
    }

    /// The items, one per line (for debugging).
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for i in &self.items {
            let what = match (i.ch, i.anchor) {
                (Some(c), _) => format!("{c:?}{}", if i.deleted { " (deleted)" } else { "" }),
                (None, Some(a)) => format!(
                    "{} of {:?}{}",
                    if a.end { "END" } else { "START" },
                    a.mark,
                    if a.sticks_left {
                        " sticks left"
                    } else {
                        " sticks right"
                    }
                ),
                _ => unreachable!(),
            };
            out += &format!("  {:?} {what} L={:?} R={:?}\n", i.id, i.left, i.right);
        }
        out
    }

    /// The styles of visible char `pos`.
    pub fn attributes_at(&self, pos: usize) -> Attributes {
        let target = self.visible_index(pos);
        self.attributes_before(target)
    }

    /// The marks active at item index `at`.
    fn active_before(&self, at: usize) -> Vec<Id> {
        let mut active: Vec<Id> = Vec::new();
        for item in &self.items[..at] {
            if let Some(a) = item.anchor {
                if a.end {
                    active.retain(|&m| m != a.mark);
                } else if self.live(a.mark) {
                    active.push(a.mark);
                }
            }
        }
        active
    }

    /// The styles of each visible char in `range`, in one pass.
    fn attributes_in(&self, range: std::ops::Range<usize>) -> Vec<Attributes> {
        let mut out = Vec::new();
        let mut styles = Styles::default();
        let mut pos = 0;
        for item in &self.items {
            if pos >= range.end {
                break;
            }
            if let Some(a) = item.anchor {
                styles.pass(self, a);
            } else if !item.deleted {
                if pos >= range.start {
                    out.push(styles.get().clone());
                }
                pos += 1;
            }
        }
        out
    }

    /// The styles in force at item index `at`.
    fn attributes_before(&self, at: usize) -> Attributes {
        self.winners(&self.active_before(at))
    }

    /// Per key, the value of the last of `active` marks to set it.
    fn winners(&self, active: &[Id]) -> Attributes {
        let mut winners: HashMap<&str, &RefMark> = HashMap::new();
        for m in active.iter().map(|m| &self.marks[m]) {
            let w = winners.entry(m.key.as_str()).or_insert(m);
            if (m.lamport, m.peer) > (w.lamport, w.peer) {
                *w = m;
            }
        }
        winners
            .into_iter()
            .filter(|(_, m)| !m.value.is_null())
            .map(|(k, m)| (k.to_owned(), m.value.clone()))
            .collect()
    }

    /// The text as runs of equal styles, char by char.
    pub fn to_delta(&self) -> Vec<Delta> {
        let mut out: Vec<Delta> = Vec::new();
        let mut styles = Styles::default();
        for item in &self.items {
            if let Some(a) = item.anchor {
                styles.pass(self, a);
                continue;
            }
            if item.deleted {
                continue;
            }
            if let Some(attributes) = self.block_attributes(item) {
                out.push(Delta::Block { attributes });
                continue;
            }
            let attrs = styles.get().clone();
            if let Some(value) = &item.embed {
                out.push(Delta::Embed {
                    insert: value.clone(),
                    attributes: attrs,
                });
                continue;
            }
            let ch = item.ch.expect("visible items are chars");
            match out.last_mut() {
                Some(Delta::Insert { insert, attributes }) if *attributes == attrs => {
                    insert.push(ch)
                }
                _ => out.push(Delta::Insert {
                    insert: ch.to_string(),
                    attributes: attrs,
                }),
            }
        }
        out
    }

    fn apply(&mut self, op: RefOp) {
        let lamport = self.next_lamport;
        self.apply_with(op, lamport);
    }

    /// The incarnation of "t" shown.
    fn shown_name(&self) -> String {
        if self.shown.is_empty() {
            "t".to_owned()
        } else {
            self.shown.clone()
        }
    }

    /// The incarnation map `name` resolves to.
    fn map_raw(&self, name: &str) -> String {
        let value = self
            .maps
            .get(MAP_REGISTER)
            .and_then(|m| m.get(name))
            .and_then(|e| e.2.as_ref());
        incarnation(name, value)
    }

    /// Deletes text "t" as `Doc::delete_text` does: one register write
    /// naming the next incarnation after its own id.
    pub fn delete_text(&mut self) {
        let (peer, counter) = self.next_id();
        let next = format!("\u{1}{peer}@{counter}\u{1}t");
        self.map_set(TEXT_REGISTER, "t", Some(Value::String(next)));
    }

    /// Deletes map `name` as `Doc::delete_map` does.
    pub fn delete_map(&mut self, name: &str) {
        let (peer, counter) = self.next_id();
        let next = format!("\u{1}{peer}@{counter}\u{1}{name}");
        self.map_set(MAP_REGISTER, name, Some(Value::String(next)));
    }

    /// Shows the incarnation of "t" the register names.
    fn reshow(&mut self) {
        let value = self
            .maps
            .get(TEXT_REGISTER)
            .and_then(|m| m.get("t"))
            .and_then(|e| e.2.as_ref());
        let want = incarnation("t", value);
        if want != self.shown_name() {
            let items = self.hidden.remove(&want).unwrap_or_default();
            let old = std::mem::replace(&mut self.items, items);
            self.hidden.insert(self.shown_name(), old);
            self.shown = want;
        }
    }

    fn apply_with(&mut self, op: RefOp, lamport: u32) {
        let text = match &op {
            RefOp::Insert { text, .. }
            | RefOp::Delete { text, .. }
            | RefOp::Anchor { text, .. } => Some(text.clone()),
            _ => None,
        };
        match text {
            // An op of a hidden incarnation: applied to it, in its place.
            Some(text) if text != self.shown_name() => {
                let items = self.hidden.remove(&text).unwrap_or_default();
                let shown = std::mem::replace(&mut self.items, items);
                self.apply_here(op, lamport);
                let items = std::mem::replace(&mut self.items, shown);
                self.hidden.insert(text, items);
            }
            _ => self.apply_here(op, lamport),
        }
        self.reshow();
    }

    fn apply_here(&mut self, op: RefOp, lamport: u32) {
        let id = op.id();
        let next = self.next.entry(id.0).or_insert(0);
        assert_eq!(*next, id.1, "ops arrive in counter order");
        *next += 1;
        self.next_lamport = self.next_lamport.max(lamport + 1);
        match &op {
            RefOp::Insert {
                id,
                ch,
                left,
                right,
                block,
                embed,
                ..
            } => self.integrate(RefItem {
                id: *id,
                ch: Some(*ch),
                anchor: None,
                left: *left,
                right: *right,
                deleted: self.char_deleted(*id),
                block: block.clone(),
                embed: embed.clone(),
            }),
            RefOp::BlockStart { .. } => {}
            RefOp::BlockSet {
                id,
                target,
                key,
                value,
            } => {
                // The write's first op is its mark start.
                let start = (id.0, id.1 - 1);
                self.block_sets.entry(*target).or_default().push((
                    lamport,
                    id.0,
                    key.clone(),
                    value.clone(),
                    start,
                ));
            }
            RefOp::Anchor {
                id,
                anchor,
                left,
                right,
                mark,
                ..
            } => {
                if let Some(m) = mark {
                    self.marks.insert(*id, m.clone());
                }
                if anchor.end {
                    self.ended.insert(anchor.mark);
                }
                // Glued: after the char (and its other left-sticky
                // anchors), or right before the char.
                let at = if anchor.sticks_left {
                    let mut at = left.map_or(0, |l| self.index_of(l) + 1);
                    while self
                        .items
                        .get(at)
                        .is_some_and(|i| i.anchor.is_some_and(|a| a.sticks_left))
                    {
                        at += 1;
                    }
                    at
                } else {
                    right.map_or(self.items.len(), |r| self.index_of(r))
                };
                self.items.insert(
                    at,
                    RefItem {
                        id: *id,
                        ch: None,
                        anchor: Some(*anchor),
                        left: *left,
                        right: *right,
                        deleted: false,
                        block: None,
                        embed: None,
                    },
                );
            }
            RefOp::Delete { id, target, .. } => {
                self.deleters.entry(*target).or_default().push(*id);
                let i = self.index_of(*target);
                self.items[i].deleted = self.char_deleted(*target);
            }
            RefOp::Cancel { id, target } => {
                self.cancels.entry(*target).or_default().push(*id);
                self.refresh_deleted();
            }
            // The ghost's writes count as never made.
            RefOp::MapSet { id, .. } if self.ghost == Some(id.0) => {}
            RefOp::MapSet {
                id,
                map,
                key,
                value,
                ..
            } => {
                let entry = self
                    .maps
                    .entry(map.clone())
                    .or_default()
                    .entry(key.clone())
                    .or_insert((0, 0, None));
                if (lamport, id.0) > (entry.0, entry.1) {
                    *entry = (lamport, id.0, value.clone());
                }
            }
        }
        self.log.push((op, lamport));
    }

    /// Writes `key` of map `map` (`None` deletes it), unless it has that
    /// value already (as Weft, which then makes no op).
    pub fn map_set(&mut self, map: &str, key: &str, value: Option<Value>) {
        let map = &if map.starts_with('\u{1}') {
            map.to_owned()
        } else {
            self.map_raw(map)
        };
        let now = self
            .maps
            .get(map)
            .and_then(|m| m.get(key))
            .and_then(|e| e.2.clone());
        if now == value {
            return;
        }
        let id = self.next_id();
        let before = (!map.starts_with('\u{1}') || public(map) != map).then_some(now);
        self.apply(RefOp::MapSet {
            id,
            map: map.to_owned(),
            key: key.to_owned(),
            value,
            before,
        });
    }

    /// Every map with entries, as [`crate::helpers::map_contents`] lists a document's.
    pub fn map_contents(&self) -> Vec<(String, Vec<(String, Value)>)> {
        let mut out = self
            .maps
            .iter()
            .filter(|(raw, _)| !raw.starts_with('\u{1}') || public(raw) != raw.as_str())
            .filter(|(raw, _)| self.map_raw(public(raw)) == **raw)
            .map(|(name, m)| {
                let entries = m
                    .iter()
                    .filter_map(|(k, e)| e.2.clone().map(|v| (k.clone(), v)))
                    .collect::<Vec<_>>();
                (public(name).to_owned(), entries)
            })
            .filter(|(_, e)| !e.is_empty())
            .collect::<Vec<_>>();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// YjsMod / FugueMax integration, straight from the reference algorithm,
    /// over the chars alone; then the char goes after the anchors glued to
    /// the char before it and before those glued to the char after it.
    fn integrate(&mut self, item: RefItem) {
        let chars: Vec<usize> = (0..self.items.len())
            .filter(|&i| self.items[i].is_char())
            .collect();
        let char_index = |doc: &RefDoc, id: Id| {
            chars
                .iter()
                .position(|&i| doc.items[i].id == id)
                .expect("known char") as isize
        };
        let len = chars.len() as isize;
        let left = item.left.map_or(-1, |l| char_index(self, l));
        let right = item.right.map_or(len, |r| char_index(self, r));
        let mut dest = left + 1;
        let mut scanning = false;
        let mut i = left + 1;
        loop {
            if !scanning {
                dest = i;
            }
            if i == len || i == right {
                break;
            }
            let other = &self.items[chars[i as usize]];
            let oleft = other.left.map_or(-1, |l| char_index(self, l));
            let oright = other.right.map_or(len, |r| char_index(self, r));
            if oleft < left {
                break;
            } else if oleft == left {
                if oright < right {
                    scanning = true;
                } else if oright == right {
                    // Chars before block markers, then by id.
                    if (item.block.is_some(), item.id) < (other.block.is_some(), other.id) {
                        break;
                    }
                    scanning = false;
                } else {
                    scanning = false;
                }
            }
            i += 1;
        }
        let mut at = chars
            .get(dest as usize)
            .copied()
            .unwrap_or(self.items.len());
        while at > 0 && self.items[at - 1].anchor.is_some_and(|a| !a.sticks_left) {
            at -= 1;
        }
        self.items.insert(at, item);
    }

    /// Applies the ops `other` has, `self` lacks and `version` (a
    /// causally closed version) holds, in `other`'s order: what a
    /// replica that now holds `version` received of `other`'s.
    pub fn merge_upto(&mut self, other: &RefDoc, version: &weft::VersionVector) {
        for (op, lamport) in &other.log {
            let id = op.id();
            if id.1 < version.get(id.0) && !self.knows(id) {
                self.apply_with(op.clone(), *lamport);
            }
        }
    }

    /// The number of ops in the log (ops applied so far).
    pub fn log_len(&self) -> usize {
        self.log.len()
    }

    /// Applies the ops `other` logged from index `start` on (those it made
    /// or received since its log was `start` long) that `self` lacks.
    pub fn merge_since(&mut self, other: &RefDoc, start: usize) {
        for (op, lamport) in &other.log[start..] {
            if !self.knows(op.id()) {
                self.apply_with(op.clone(), *lamport);
            }
        }
    }

    /// [`RefDoc::merge_upto`] from index `*from` of `pool`'s log on, where
    /// every op before `*from` is known; moves `*from` past the ops then
    /// known (so that catching up with a growing pool does not rescan it).
    pub fn catch_up(&mut self, pool: &RefDoc, version: &weft::VersionVector, from: &mut usize) {
        for (op, lamport) in &pool.log[*from..] {
            let id = op.id();
            if id.1 < version.get(id.0) && !self.knows(id) {
                self.apply_with(op.clone(), *lamport);
            }
        }
        while pool
            .log
            .get(*from)
            .is_some_and(|(op, _)| self.knows(op.id()))
        {
            *from += 1;
        }
    }

    /// [`RefDoc::version`] as a Weft version vector.
    pub fn version_vector(&self) -> weft::VersionVector {
        self.version().into_iter().collect()
    }

    /// The visible length in UTF-16 units.
    pub fn len_utf16(&self) -> usize {
        self.text().encode_utf16().count()
    }

    /// Applies every op `other` has and `self` lacks, in `other`'s order.
    pub fn merge_from(&mut self, other: &RefDoc) {
        for (op, lamport) in &other.log {
            if !self.knows(op.id()) {
                self.apply_with(op.clone(), *lamport);
            }
        }
    }
}
