//! Decoding a snapshot's history and texts into the document's own types
//! (the op log, each text's items): the costly part of a snapshot, which
//! the document runs only when an operation needs it (see `doc::lazy`).
//!
//! Every op is checked by the rules of `oplog::check`, which the update
//! importer asks too (origins and delete targets are earlier chars of the
//! same text, mark ends name an unended start of the same text, glue on
//! the rule's side); and the snapshot as a whole is checked here (all
//! content used, segments cover every insert and anchor exactly once,
//! counts match the meta, stored styles match the history's). On error
//! nothing is returned.

use std::borrow::Cow;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::id::{MapIdx, Seq, TextIdx, NO_SEQ, UNKNOWN_ORIGIN};
use crate::oplog::{check, origins_at, OpKind, OpLog, OpRun, NO_CONTENT};
use crate::text::{style_spans, Counts, Item, StoredStyles, TreeBuilder, Unloaded};

use super::columns::{self, Neighbours};
use super::root::{decode_ranges, push_root};
use super::snapshot::{
    bytes_of_chars, key, unpack_deflate, Segment, SegmentReader, Snapshot, KEY_CHANGES,
    KEY_DELETED, KEY_DELETED_LATER, KEY_HISTORY, KEY_ROOT_MAP_SETS, KEY_ROOT_MARKS, KEY_SEGMENTS,
};
use super::snapshot_history::{self, ReadKind};

/// What [`Snapshot::load_head`] leaves: where each text's document-order
/// text sits in the log's content. Its segments are read where they are
/// used: straight into a tree by [`Snapshot::plain_items`], into a list
/// by [`Snapshot::load_history`].
#[derive(Debug, Clone)]
pub(crate) struct Head {
    /// Byte range of each text's document-order text in the log's content.
    text_ranges: Vec<Range<usize>>,
}

/// What [`Snapshot::load_history`] leaves for building the texts.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// Each text's segments.
    segments: Vec<Vec<Segment>>,
    /// Per text and segment, the index of the op run holding its first
    /// seq (found in one pass in seq order instead of a search each).
    first_runs: Vec<Vec<u32>>,
    /// Per document text index, the inserts and anchors of the history
    /// in that text (counted once, not per text built).
    inserted: Vec<u64>,
}

impl Snapshot {
    /// The cheap part of loading: a new op log holding the change table
    /// (so the document can take local ops on top) and every text's
    /// document-order text (`text` gives it: a copy already read, or
    /// `None` to decompress it straight into the log), but not the op
    /// runs of the history: those wait for [`Snapshot::load_history`].
    pub fn load_head<'t>(&self, text: impl Fn(u32) -> Option<&'t str>) -> Result<(OpLog, Head)> {
        let bad = |what| Error::Malformed { offset: 0, what };
        let meta = &self.meta;
        let mut log = OpLog::default();
        let changes = self.store.get(KEY_CHANGES).ok_or(bad("change table"))?;
        snapshot_history::decode_changes(
            &self.unpack(changes, "change table")?,
            &meta.peers,
            &mut log,
        )?;
        if log.next_seq() != meta.ops
            || log.version() != meta.version
            || log.frontiers() != meta.frontiers
        {
            return Err(bad("change table"));
        }
        log.set_trimmed(self.trimmed);
        let n = meta.texts.len();
        let mut text_ranges = Vec::with_capacity(n);
        for i in 0..n as u32 {
            let text = match text(i) {
                Some(text) => Cow::Borrowed(text),
                None => {
                    // The log's content grows as the document is typed
                    // into: room for that, so the first keystrokes do not
                    // copy the whole text to a bigger buffer.
                    let room = meta.texts.get(i as usize).map_or(0, |m| m.counts.utf8 / 16);
                    Cow::Owned(self.stored_text(i, room as usize)?)
                }
            };
            let len = text.len();
            if log.content().len() + len >= NO_CONTENT as usize {
                return Err(Error::HistoryFull);
            }
            let start = match text {
                Cow::Borrowed(text) => log.push_content(text),
                Cow::Owned(text) => log.push_content_owned(text),
            } as usize;
            text_ranges.push(start..start + len);
        }
        log.defer_ops();
        Ok((log, Head { text_ranges }))
    }

    /// Decodes the op runs of the history into `log`, which holds what
    /// [`Snapshot::load_head`] made (plus any local ops taken since),
    /// numbering texts by `doc_index` (the document's index of each
    /// snapshot text). Returns what building the texts needs. On error
    /// `log` is unchanged.
    pub fn load_history(
        &self,
        log: &mut OpLog,
        head: &Head,
        doc_index: &[TextIdx],
    ) -> Result<Loaded> {
        let bad = |what| Error::Malformed { offset: 0, what };
        let n = self.meta.texts.len();
        let segments = (0..n as u32)
            .map(|i| self.segments(i))
            .collect::<Result<Vec<_>>>()?;
        let all = head.all_segments(&segments, log.content())?;
        // In seq order (sorted as packed integers: much cheaper than
        // sorting the entries), the order the history's inserts take
        // their text from the segments in.
        let mut order: Vec<u64> = all
            .iter()
            .enumerate()
            .map(|(k, v)| (u64::from(v.0.seq) << 32) | k as u64)
            .collect();
        radix_sort_high(&mut order);
        let by_seq: Vec<&(Segment, u32, Range<usize>)> = order
            .iter()
            .filter_map(|k| all.get((*k & 0xFFFF_FFFF) as usize))
            .collect();
        let total: usize = all.iter().map(|v| v.2.len()).sum();
        // Built on the side and attached at the end, so that an error
        // leaves `log` as it was.
        let mut side = log.history_side();
        // Map ops name maps by the snapshot's index: the same as the
        // side log's, interned in that order.
        for name in &self.map_names {
            side.intern_map(name);
        }
        let maps = self.map_names.len() as u32;
        if side.map_names().len() != self.map_names.len() {
            return Err(bad("map names"));
        }
        // Op runs: about one per segment (inserts split by visibility)
        // plus the deletes; a guess that saves most regrowth.
        side.reserve(all.len() + all.len() / 2, 0);
        // The inserts' text is the texts' own: each insert piece lies in
        // one segment, whose chars are contiguous in its text.
        // The deleted chars' text, in seq order (a snapshot from before it
        // was stored, or of a document lacking some, has none): appended
        // to the log's content once everything checked out.
        let deleted = match self.store.get(KEY_DELETED) {
            Some(value) => {
                let raw = if self.version >= 4 {
                    unpack_deflate(value, "deleted text")?
                } else {
                    self.unpack(value, "deleted text")?
                };
                String::from_utf8(raw.into_owned()).map_err(|_| bad("deleted text UTF-8"))?
            }
            None => String::new(),
        };
        let deleted_base = log.content().len();
        if deleted_base + deleted.len() >= NO_CONTENT as usize {
            return Err(Error::HistoryFull);
        }
        let mut cursor = SegmentCursor {
            segs: &by_seq,
            content: log.content(),
            i: 0,
            in_segment: 0,
            handed_out: 0,
            deleted: &deleted,
            deleted_base,
            deleted_at: 0,
            trimmed: self.trimmed,
            root_text: false,
        };
        let ops = self.meta.ops;
        let mut seq = 0;
        let mut later = Vec::new();
        if self.trimmed > 0 {
            let marks = self.store.get(KEY_ROOT_MARKS).ok_or(bad("root marks"))?;
            let marks = snapshot_history::read_root_marks(
                &self.unpack(marks, "root marks")?,
                self.trimmed,
            )?;
            later = match self.store.get(KEY_DELETED_LATER) {
                Some(value) => decode_ranges(&self.unpack(value, "deleted later")?, self.trimmed)?,
                None => Vec::new(),
            };
            let sets = match self.store.get(KEY_ROOT_MAP_SETS) {
                Some(value) => super::snapshot_maps::read_root_sets(
                    &self.unpack(value, "root map ops")?,
                    self.trimmed,
                    self.map_names.len(),
                )?,
                None => Vec::new(),
            };
            push_root(
                &mut side,
                &mut cursor,
                self.trimmed,
                (&marks, &sets),
                &later,
                doc_index,
            )?;
            seq = self.trimmed;
        }
        // Version 4 predicts origins from the segments' document order.
        let mut neighbours = (self.version >= 4 && seq < ops).then(|| {
            let segs = all.iter().map(|(s, t, _)| (s.seq, s.len, *t)).collect();
            let by_seq = order.iter().map(|k| (k & 0xFFFF_FFFF) as u32).collect();
            Neighbours::new(segs, by_seq)
        });
        while seq < ops {
            let value = self
                .store
                .get(&key(KEY_HISTORY, seq))
                .ok_or(bad("history block"))?;
            let block = self.unpack(value, "history block")?;
            let push = |seq, len, t: u32, kind| {
                if let ReadKind::MapSet { map, key, value } = kind {
                    side.push_map_set(seq, MapIdx::new(map), &key, value);
                    return Ok(());
                }
                let text = doc_index
                    .get(t as usize)
                    .copied()
                    .ok_or(bad("text index"))?;
                push_run(&mut side, &mut cursor, seq, len, text, kind)
            };
            let end = match neighbours.as_mut() {
                Some(neighbours) => {
                    columns::decode_block(&block, seq, ops, (n as u32, maps), neighbours, push)?
                }
                None => snapshot_history::decode_block(&block, seq, ops, (n as u32, maps), push)?,
            };
            if end == seq {
                return Err(bad("history block"));
            }
            seq = end;
        }
        if let Some(value) = self.store.get(super::snapshot_maps::KEY_EMBEDS) {
            super::snapshot_maps::read_embeds(&self.unpack(value, "embeds")?, ops, &mut side)?;
        }
        if cursor.handed_out != total || cursor.deleted_at != deleted.len() {
            return Err(bad("snapshot history"));
        }
        // The root's chars said to be visible at the root and deleted
        // now were deleted by ops after it.
        let after = side.targets_in(self.trimmed..ops, self.trimmed);
        if self.trimmed > 0 && !crate::oplog::minus(&later, &after).is_empty() {
            return Err(bad("deleted later"));
        }
        let first_runs = first_runs(side.ops(), &order, &segments);
        let slots = doc_index.iter().max().map_or(0, |&m| m.as_usize() + 1);
        let mut inserted = vec![0u64; slots];
        for r in side.ops() {
            if !matches!(r.kind, OpKind::Delete { .. } | OpKind::MapSet { .. }) {
                if let Some(n) = inserted.get_mut(r.text.as_usize()) {
                    *n += u64::from(r.len);
                }
            }
        }
        if !deleted.is_empty() {
            log.push_content_owned(deleted);
        }
        log.attach_history(side);
        log.set_revivable(later);
        Ok(Loaded {
            segments,
            first_runs,
            inserted,
        })
    }

    /// The items of snapshot text `unloaded.index` (document text `t`) in
    /// document order, from its segments (`head`) and the history that
    /// [`Snapshot::load_history`] put in `log` (returning `loaded`).
    /// Checks everything against the history and the counts the meta
    /// promised.
    pub fn text_items(
        &self,
        (head, loaded): (&Head, &Loaded),
        log: &OpLog,
        unloaded: Unloaded,
        t: TextIdx,
    ) -> Result<Vec<Item>> {
        let bad = |what| Error::Malformed { offset: 0, what };
        let i = unloaded.index as usize;
        let range = head.text_range(i)?;
        let segs = loaded.segments.get(i).ok_or(bad("snapshot text index"))?;
        let first_runs = loaded.first_runs.get(i).ok_or(bad("snapshot text index"))?;
        let content = log.content().get(..range.end).ok_or(bad("snapshot text"))?;
        let mut items: Vec<Item> = Vec::with_capacity(segs.len() + segs.len() / 2);
        let mut at = range.start;
        let mut covered = 0u64;
        for (j, seg) in segs.iter().enumerate() {
            let end = seg.seq.checked_add(seg.len).filter(|&e| e <= self.meta.ops);
            let end = end.ok_or(bad("segment"))?;
            let mut s = seg.seq;
            let mut ri = match first_runs.get(j).map(|&r| r as usize) {
                Some(r)
                    if log
                        .ops()
                        .get(r)
                        .is_some_and(|run| run.seq <= s && s < run.end()) =>
                {
                    r
                }
                _ => log.op_index(s),
            };
            while s < end {
                let run = log.ops().get(ri).filter(|r| r.text == t && r.seq <= s);
                let run = run.ok_or(bad("segment op"))?;
                let upto = run.end().min(end);
                let off = s - run.seq;
                match run.kind {
                    OpKind::Insert { .. } => {
                        let mut item = char_item(s, upto - s, seg.deleted, content, &mut at)?;
                        (item.origin_left, item.origin_right) = if s < self.trimmed {
                            (UNKNOWN_ORIGIN, UNKNOWN_ORIGIN)
                        } else {
                            origins_at(run, off)
                        };
                        items.push(item);
                    }
                    OpKind::MarkStart { .. } | OpKind::MarkEnd { .. } => {
                        let a = run.kind.anchor().ok_or(bad("mark"))?;
                        let m = log.mark(a.mark).ok_or(bad("mark"))?;
                        if !seg.deleted {
                            return Err(bad("visible anchor"));
                        }
                        items.push(Item::anchor(s, a, m.expand));
                    }
                    OpKind::Delete { .. } | OpKind::MapSet { .. } => return Err(bad("segment op")),
                }
                covered += u64::from(upto - s);
                s = upto;
                ri += 1;
            }
        }
        if at != range.end {
            return Err(bad("unused snapshot text"));
        }
        // Every insert and anchor of the text, each exactly once.
        let ops = loaded.inserted.get(t.as_usize()).copied().unwrap_or(0);
        if covered != ops || overlapping(segs, self.meta.ops) {
            return Err(bad("snapshot segments"));
        }
        check_counts(&items, unloaded)?;
        // The styles that reads took from the snapshot before the tree
        // was built (version 5) are the ones the history gives it.
        if let Some(stored) = self.stored_styles(unloaded.index)? {
            let spans = style_spans(items.iter(), log.marks(), log.keys());
            if stored != StoredStyles::new(spans) {
                return Err(bad("snapshot styles"));
            }
        }
        Ok(items)
    }

    /// The leaves of snapshot text `unloaded.index`, from its segments
    /// alone, before the history is loaded: every char's origins are
    /// [`UNKNOWN_ORIGIN`] until [`Snapshot::fill_origins`]. Enough for
    /// local edits, which never read origins. Only for a text without
    /// marks (its anchors need the history). Checks what can be checked
    /// without the history; the rest is checked when it fills in the
    /// origins.
    pub fn plain_items(&self, head: &Head, log: &OpLog, unloaded: Unloaded) -> Result<TreeBuilder> {
        let bad = |what| Error::Malformed { offset: 0, what };
        let range = head.text_range(unloaded.index as usize)?;
        // Overlapping segments are caught when the origins are filled in:
        // until then no seq is looked up.
        if unloaded.counts.anchors > 0 {
            return Err(bad("snapshot segments"));
        }
        let content = log.content().get(..range.end).ok_or(bad("snapshot text"))?;
        let value = self.store.get(&key(KEY_SEGMENTS, unloaded.index));
        let raw = self.unpack_segments(value.unwrap_or(&[]))?;
        let segs = SegmentReader::new(&raw)?;
        // In an ASCII text every char is one byte and one UTF-16 unit, so
        // no item needs its chars looked at.
        let ascii = content.get(range.clone()).is_some_and(str::is_ascii);
        let mut built = TreeBuilder::with_capacity(segs.len());
        let mut at = range.start;
        let ops = self.meta.ops;
        segs.for_each(|seg| {
            if seg.seq + seg.len > ops {
                return Err(bad("segment"));
            }
            let mut item = if ascii {
                ascii_item(seg, range.end, &mut at)?
            } else {
                char_item(seg.seq, seg.len, seg.deleted, content, &mut at)?
            };
            item.origin_left = UNKNOWN_ORIGIN;
            item.origin_right = UNKNOWN_ORIGIN;
            built.push(item);
            Ok(())
        })?;
        if at != range.end {
            return Err(bad("unused snapshot text"));
        }
        if built.counts() != unloaded.counts {
            return Err(bad("snapshot text counts"));
        }
        Ok(built)
    }

    /// `items` (document text `t`, built by [`Snapshot::plain_items`] and
    /// edited since) with the origins of the snapshot's chars filled in
    /// from the loaded history `log`, split where those chars' op runs
    /// end. Checks what [`Snapshot::text_items`] checks against the
    /// history: each snapshot char is an insert of this text, and every
    /// insert of the text is there exactly once.
    pub fn fill_origins(
        &self,
        loaded: &Loaded,
        log: &OpLog,
        t: TextIdx,
        items: impl Iterator<Item = Item>,
    ) -> Result<Vec<Item>> {
        let bad = |what| Error::Malformed { offset: 0, what };
        let content = log.content().as_bytes();
        let mut out = Vec::new();
        let mut covered = 0u64;
        let mut snapshot_chars = Vec::new();
        for item in items {
            if item.seq >= self.meta.ops {
                out.push(item);
                continue;
            }
            snapshot_chars.push(Segment {
                seq: item.seq,
                len: item.len,
                deleted: item.deleted,
            });
            let mut rest = item;
            let mut ri = log.op_index(rest.seq);
            loop {
                let run = log.ops().get(ri).filter(|r| {
                    r.text == t && r.seq <= rest.seq && matches!(r.kind, OpKind::Insert { .. })
                });
                let run = run.ok_or(bad("segment op"))?;
                let tail =
                    (rest.end() > run.end()).then(|| rest.split(run.end() - rest.seq, content));
                if rest.seq >= self.trimmed {
                    (rest.origin_left, rest.origin_right) = origins_at(run, rest.seq - run.seq);
                } else {
                    (rest.origin_left, rest.origin_right) = (UNKNOWN_ORIGIN, UNKNOWN_ORIGIN);
                }
                covered += u64::from(rest.len);
                out.push(rest);
                match tail {
                    Some(tail) => (rest, ri) = (tail, ri + 1),
                    None => break,
                }
            }
        }
        if loaded.inserted.get(t.as_usize()).copied().unwrap_or(0) != covered
            || overlapping(&snapshot_chars, self.meta.ops)
        {
            return Err(bad("snapshot segments"));
        }
        Ok(out)
    }
}

impl Head {
    /// All segments of all texts (`segments`, per text) as (segment,
    /// snapshot text index, byte range of its text in `content`, the
    /// log's, if visible). Checks that the visible segments use each text
    /// exactly.
    fn all_segments(
        &self,
        segments: &[Vec<Segment>],
        content: &str,
    ) -> Result<Vec<(Segment, u32, Range<usize>)>> {
        let bad = |what| Error::Malformed { offset: 0, what };
        let mut all = Vec::with_capacity(segments.iter().map(Vec::len).sum());
        for (i, (segs, range)) in segments.iter().zip(&self.text_ranges).enumerate() {
            let text = content.get(range.clone()).ok_or(bad("snapshot text"))?;
            let mut at = 0usize;
            for s in segs {
                let mut bytes = 0;
                if !s.deleted {
                    let rest = text.get(at..).unwrap_or("");
                    (bytes, _) = bytes_of_chars(rest, s.len).ok_or(bad("segment text"))?;
                }
                all.push((*s, i as u32, range.start + at..range.start + at + bytes));
                at += bytes;
            }
            if at != text.len() {
                return Err(bad("unused snapshot text"));
            }
        }
        Ok(all)
    }

    /// Where snapshot text `i` is in the log's content.
    pub fn text_range(&self, i: usize) -> Result<Range<usize>> {
        self.text_ranges.get(i).cloned().ok_or(Error::Malformed {
            offset: 0,
            what: "snapshot text index",
        })
    }
}

/// The item of segment `seg` of an ASCII text: for a visible one, its
/// text is the next `seg.len` bytes of the log's content from byte `*at`
/// (which moves on), which must end by `end`. Origins are left to the
/// caller. Without a branch on `seg.deleted` (visible and deleted
/// segments alternate: a mispredicted branch per item).
#[inline]
fn ascii_item(seg: Segment, end: usize, at: &mut usize) -> Result<Item> {
    let bytes = if seg.deleted { 0 } else { seg.len };
    let next = *at + bytes as usize;
    if next > end {
        return Err(Error::Malformed {
            offset: 0,
            what: "segment text",
        });
    }
    let item = Item {
        seq: seg.seq,
        len: seg.len,
        origin_left: NO_SEQ,
        origin_right: NO_SEQ,
        byte_start: if seg.deleted { NO_CONTENT } else { *at as u32 },
        bytes,
        utf16: bytes,
        deleted: seg.deleted,
        anchor: 0,
    };
    *at = next;
    Ok(item)
}

/// A char item `seq..seq + len` of a segment: for a visible one, its
/// text is the next chars of `content` from byte `*at` (which moves on).
/// Origins are left to the caller.
fn char_item(seq: Seq, len: u32, deleted: bool, content: &str, at: &mut usize) -> Result<Item> {
    let mut item = Item {
        seq,
        len,
        origin_left: NO_SEQ,
        origin_right: NO_SEQ,
        byte_start: NO_CONTENT,
        bytes: 0,
        utf16: 0,
        deleted,
        anchor: 0,
    };
    if !deleted {
        let rest = content.get(*at..).unwrap_or("");
        let (bytes, utf16) = bytes_of_chars(rest, len).ok_or(Error::Malformed {
            offset: 0,
            what: "segment text",
        })?;
        item.byte_start = *at as u32;
        item.bytes = bytes as u32;
        item.utf16 = utf16;
        *at += bytes;
    }
    Ok(item)
}

/// Checks the counts of a text's items against those its meta promised.
fn check_counts(items: &[Item], unloaded: Unloaded) -> Result<()> {
    let mut counts = Counts::default();
    for item in items {
        counts.add(item.counts());
    }
    if counts != unloaded.counts {
        return Err(Error::Malformed {
            offset: 0,
            what: "snapshot text counts",
        });
    }
    Ok(())
}

/// Walks the segments of all texts in seq order beside the history's
/// inserts, handing out where their text is in the log's content.
pub(super) struct SegmentCursor<'a> {
    pub(super) segs: &'a [&'a (Segment, u32, Range<usize>)],
    /// The log's content (the texts, which the segments' ranges index).
    content: &'a str,
    i: usize,
    /// Bytes of segment `i` handed out so far.
    in_segment: usize,
    /// Bytes handed out in all.
    handed_out: usize,
    /// The deleted chars' text in seq order (empty: the snapshot has
    /// none), which will sit in the log's content from `deleted_base` on.
    deleted: &'a str,
    deleted_base: usize,
    /// Bytes of it handed out so far.
    deleted_at: usize,
    /// A shallow snapshot's trimmed ops (seqs below it): its deleted
    /// chars have no text...
    trimmed: Seq,
    /// ...unless this is set (by [`push_root`], for the chars that ops
    /// after the root deleted).
    pub(super) root_text: bool,
}

/// The op run holding `seq`, if the log has it.
pub(super) fn run_at(log: &OpLog, seq: Seq) -> Option<&OpRun> {
    log.ops().get(log.op_index_recent(seq))
}

/// Checks one op run read from a block against the log built so far and
/// appends it (inserts split where their chars' visibility changes).
fn push_run(
    log: &mut OpLog,
    cursor: &mut SegmentCursor<'_>,
    seq: Seq,
    len: u32,
    text: TextIdx,
    kind: ReadKind,
) -> Result<()> {
    let bad = |what| Error::Malformed { offset: 0, what };
    let origins = |log: &OpLog, left: Seq, right: Seq| {
        check::origin(log, left, text, seq) && check::origin(log, right, text, seq)
    };
    let push = |log: &mut OpLog, kind: OpKind| {
        log.push_op_unmerged(OpRun {
            seq,
            len,
            text,
            kind,
        });
    };
    match kind {
        ReadKind::Insert { left, right } => {
            if !origins(log, left, right) {
                return Err(bad("origin"));
            }
            push_insert(log, cursor, seq, len, text, (left, right))?;
        }
        ReadKind::Delete { target, reversed } => {
            let lo = if reversed {
                target.checked_sub(len - 1)
            } else {
                Some(target)
            };
            let targets = lo.and_then(|lo| Some(lo..lo.checked_add(len)?));
            if !targets.is_some_and(|t| check::targets(log, t, text, seq)) {
                return Err(bad("delete targets"));
            }
            push(log, OpKind::Delete { target, reversed });
        }
        ReadKind::MarkStart {
            left,
            right,
            key,
            value,
            expand,
        } => {
            let glued = check::glue(expand, false, check::named(left), check::named(right));
            if glued.is_err() || !origins(log, left, right) {
                return Err(bad("mark glue"));
            }
            let mark = log.start_mark(&key, value, expand, seq);
            push(
                log,
                OpKind::MarkStart {
                    origin_left: left,
                    origin_right: right,
                    mark,
                },
            );
        }
        // Taken by the block's reader.
        ReadKind::MapSet { .. } => return Err(bad("map op")),
        ReadKind::MarkEnd { left, right, start } => {
            if !origins(log, left, right) {
                return Err(bad("origin"));
            }
            let (mark, expand) = match run_at(log, start).map(|r| (r.text, r.kind)) {
                Some((start_text, OpKind::MarkStart { mark, .. })) => {
                    let m = log.mark(mark).ok_or(bad("mark"))?;
                    if !check::mark_end(start, start_text, m.end == NO_SEQ, text, seq) {
                        return Err(bad("mark start"));
                    }
                    (mark, m.expand)
                }
                _ => return Err(bad("mark start")),
            };
            if check::glue(expand, true, check::named(left), check::named(right)).is_err() {
                return Err(bad("mark end"));
            }
            log.end_mark(mark, seq).ok_or(bad("mark end"))?;
            push(
                log,
                OpKind::MarkEnd {
                    origin_left: left,
                    origin_right: right,
                    mark,
                },
            );
        }
    }
    Ok(())
}

/// Appends an insert run read from a block, split where its chars'
/// visibility changes (by the segments), the visible parts taking their
/// text from the cursor.
pub(super) fn push_insert(
    log: &mut OpLog,
    cursor: &mut SegmentCursor<'_>,
    seq: Seq,
    len: u32,
    text: TextIdx,
    (left, right): (Seq, Seq),
) -> Result<()> {
    let bad = |what| Error::Malformed { offset: 0, what };
    let run = OpRun {
        seq,
        len,
        text,
        kind: OpKind::Insert {
            origin_left: left,
            origin_right: right,
            byte_start: NO_CONTENT,
            bytes: 0,
        },
    };
    let end = seq + len;
    let mut at = seq;
    while at < end {
        // The segment holding `at`.
        while cursor
            .segs
            .get(cursor.i)
            .is_some_and(|s| s.0.seq + s.0.len <= at)
        {
            cursor.i += 1;
            cursor.in_segment = 0;
        }
        let (seg, _, range) = cursor
            .segs
            .get(cursor.i)
            .ok_or(bad("insert without segment"))?;
        if seg.seq > at {
            return Err(bad("insert without segment"));
        }
        let upto = (seg.seq + seg.len).min(end);
        let (origin_left, origin_right) = origins_at(&run, at - seq);
        let no_text = at < cursor.trimmed && !cursor.root_text;
        let (byte_start, bytes) = if seg.deleted && (cursor.deleted.is_empty() || no_text) {
            (NO_CONTENT, 0)
        } else if seg.deleted {
            let rest = cursor.deleted.get(cursor.deleted_at..).unwrap_or("");
            let (bytes, _) = bytes_of_chars(rest, upto - at).ok_or(bad("deleted text"))?;
            let start = cursor.deleted_base + cursor.deleted_at;
            cursor.deleted_at += bytes;
            (start as u32, bytes as u32)
        } else {
            let start = range.start + cursor.in_segment;
            let rest = cursor.content.get(start..range.end).unwrap_or("");
            let (bytes, _) = bytes_of_chars(rest, upto - at).ok_or(bad("content"))?;
            cursor.in_segment += bytes;
            cursor.handed_out += bytes;
            (start as u32, bytes as u32)
        };
        log.push_op_unmerged(OpRun {
            seq: at,
            len: upto - at,
            text,
            kind: OpKind::Insert {
                origin_left,
                origin_right,
                byte_start,
                bytes,
            },
        });
        at = upto;
    }
    Ok(())
}

/// Per text and segment, the index of the op run holding the segment's
/// first seq: `order` lists all segments by seq (packed as seq << 32 |
/// position in the concatenation of `segments`), so one walk beside the
/// runs finds them all.
fn first_runs(ops: &[OpRun], order: &[u64], segments: &[Vec<Segment>]) -> Vec<Vec<u32>> {
    let total: usize = segments.iter().map(Vec::len).sum();
    let mut run_of = vec![0u32; total];
    let mut ri = 0usize;
    for key in order {
        let seq = (key >> 32) as Seq;
        while ops.get(ri).is_some_and(|r| r.end() <= seq) {
            ri += 1;
        }
        if let Some(slot) = run_of.get_mut((key & 0xFFFF_FFFF) as usize) {
            *slot = ri as u32;
        }
    }
    let mut out = Vec::with_capacity(segments.len());
    let mut rest = run_of.as_slice();
    for segs in segments {
        let (head, tail) = rest.split_at(segs.len().min(rest.len()));
        out.push(head.to_vec());
        rest = tail;
    }
    out
}

/// Sorts `keys` by their high 32 bits (LSD radix sort, three passes of
/// 11 bits: linear, where a comparison sort of segments cost more than
/// the rest of loading).
fn radix_sort_high(keys: &mut Vec<u64>) {
    let mut buf = vec![0u64; keys.len()];
    for pass in 0..3u32 {
        let shift = 32 + pass * 11;
        let mut counts = [0usize; 2048];
        for k in keys.iter() {
            if let Some(c) = counts.get_mut(((k >> shift) & 2047) as usize) {
                *c += 1;
            }
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for &k in keys.iter() {
            if let Some(c) = counts.get_mut(((k >> shift) & 2047) as usize) {
                if let Some(slot) = buf.get_mut(*c) {
                    *slot = k;
                }
                *c += 1;
            }
        }
        std::mem::swap(keys, &mut buf);
    }
}

/// Whether two of `segs` (all below `limit`) share a seq. O(limit / 64 +
/// segments) with a bitset, no sorting.
fn overlapping(segs: &[Segment], limit: Seq) -> bool {
    let words = (limit as usize).div_ceil(64);
    if words > segs.len().saturating_mul(8).max(1024) {
        // Few segments over a huge seq range (only a forged snapshot has
        // that): sort them instead, so memory follows the input's size.
        let mut ranges: Vec<(Seq, Seq)> = segs.iter().map(|s| (s.seq, s.seq + s.len)).collect();
        ranges.sort_unstable();
        return ranges.windows(2).any(|w| matches!(w, [a, b] if a.1 > b.0));
    }
    let mut seen = vec![0u64; words];
    for s in segs {
        let (mut at, end) = (s.seq as usize, (s.seq + s.len) as usize);
        while at < end {
            let (word, bit) = (at / 64, at % 64);
            let n = (64 - bit).min(end - at);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            let Some(w) = seen.get_mut(word) else {
                return true;
            };
            if *w & mask != 0 {
                return true;
            }
            *w |= mask;
            at += n;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes `kind` as op run `seq..seq + len` of text 0 onto a log
    /// holding the start anchor 0 of a mark that expands after (glued to
    /// the char after it) and the inserts 1..4, all of text 0.
    fn push(seq: Seq, len: u32, kind: ReadKind) -> Result<()> {
        let mut log = OpLog::default();
        // A change holding every op the tests push.
        log.reserve_local(1, 8)?;
        let text = TextIdx::new(0);
        let expand = crate::style::ExpandType::After;
        let mark = log.start_mark("bold", crate::value::Value::Bool(true), expand, 0);
        log.push_op_unmerged(OpRun {
            seq: 0,
            len: 1,
            text,
            kind: OpKind::MarkStart {
                origin_left: NO_SEQ,
                origin_right: NO_SEQ,
                mark,
            },
        });
        log.push_op_unmerged(OpRun {
            seq: 1,
            len: 3,
            text,
            kind: OpKind::Insert {
                origin_left: NO_SEQ,
                origin_right: NO_SEQ,
                byte_start: NO_CONTENT,
                bytes: 0,
            },
        });
        let mut cursor = SegmentCursor {
            segs: &[],
            content: "",
            i: 0,
            in_segment: 0,
            handed_out: 0,
            deleted: "",
            deleted_base: 0,
            deleted_at: 0,
            trimmed: 0,
            root_text: false,
        };
        push_run(&mut log, &mut cursor, seq, len, text, kind)
    }

    #[test]
    fn deletes_name_earlier_chars_only() {
        let delete = |target, reversed| ReadKind::Delete { target, reversed };
        assert!(push(4, 3, delete(1, false)).is_ok());
        assert!(push(4, 3, delete(3, true)).is_ok());
        // The anchor, the delete itself, past the log, below seq 0 when
        // reversed, past the seqs. (The loader used to take the delete
        // itself and seqs past the log when the log ended in an insert
        // run, and to overflow on the last two.)
        assert!(push(4, 2, delete(0, false)).is_err());
        assert!(push(4, 2, delete(3, false)).is_err());
        assert!(push(4, 1, delete(9, false)).is_err());
        assert!(push(4, 2, delete(0, true)).is_err());
        assert!(push(4, 2, delete(u32::MAX, false)).is_err());
    }

    #[test]
    fn anchors_name_earlier_chars_on_their_rules_side() {
        let start = |left, right| ReadKind::MarkStart {
            left,
            right,
            key: "bold".into(),
            value: crate::value::Value::Bool(true),
            expand: crate::style::ExpandType::After,
        };
        assert!(push(4, 1, start(NO_SEQ, 2)).is_ok());
        assert!(push(4, 1, start(NO_SEQ, NO_SEQ)).is_ok());
        // Glued on the wrong side; the anchor, the op itself, past the
        // log (which the loader used to take).
        assert!(push(4, 1, start(2, NO_SEQ)).is_err());
        assert!(push(4, 1, start(NO_SEQ, 0)).is_err());
        assert!(push(4, 1, start(NO_SEQ, 4)).is_err());
        assert!(push(4, 1, start(NO_SEQ, 7)).is_err());
        let end = |left, right, start| ReadKind::MarkEnd { left, right, start };
        // The mark expands after: its end is glued to the char after it.
        assert!(push(4, 1, end(NO_SEQ, 2, 0)).is_ok());
        assert!(push(4, 1, end(2, NO_SEQ, 0)).is_err());
        assert!(push(4, 1, end(NO_SEQ, 9, 0)).is_err());
        // Not a start anchor; not an earlier op.
        assert!(push(4, 1, end(NO_SEQ, 2, 2)).is_err());
        assert!(push(4, 1, end(NO_SEQ, 2, 4)).is_err());
    }
}
