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
use crate::id::{Seq, TextIdx, NO_SEQ};
use crate::oplog::{check, OpKind, OpLog, OpRun, Runs, NO_CONTENT};
use crate::text::{
    fill_origins, items_from_history, style_spans, Item, PlainBuilder, Segment, StoredStyles,
    TreeBuilder, Unloaded,
};

use super::columns::{self, Neighbours};
use super::root::{cancel_root_marks, decode_ranges, decode_starts, push_root};
use crate::unit::bytes_of_chars;

use super::packed::{unpack, Codec};
use super::snapshot::{
    key, SegmentReader, Snapshot, KEY_CHANGES, KEY_DELETED, KEY_DELETED_LATER, KEY_HISTORY,
    KEY_ROOT_CANCELLED, KEY_ROOT_MAP_SETS, KEY_ROOT_MARKS, KEY_SEGMENTS,
};
use super::snapshot_history;

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
        let bad = |what| Error::Inconsistent { what };
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
        let bad = |what| Error::Inconsistent { what };
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
                // Deflate in every mode since version 4.
                let implied = if self.version >= 4 {
                    Codec::Deflate
                } else {
                    self.codec()
                };
                let raw = unpack(value, "deleted text", self.framing(implied))?;
                String::from_utf8(raw.into_owned()).map_err(|e| Error::Malformed {
                    offset: e.utf8_error().valid_up_to(),
                    what: "deleted text UTF-8",
                })?
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
            if let Some(value) = self.store.get(KEY_ROOT_CANCELLED) {
                if self.version < 7 {
                    return Err(bad("cancelled root marks before version 7"));
                }
                let value = self.unpack(value, "cancelled root marks")?;
                let starts = decode_starts(&value, self.trimmed)?;
                cancel_root_marks(&mut side, &starts, self.trimmed)?;
            }
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
            // The block's text indexes are the snapshot's.
            let trimmed = self.trimmed;
            let version = self.version;
            let push = |side: &mut OpLog, mut run: OpRun| {
                // A shallow snapshot holds cancels from version 7 on.
                if trimmed > 0 && version < 7 && matches!(run.kind, OpKind::Cancel { .. }) {
                    return Err(bad("cancel in a shallow snapshot before version 7"));
                }
                run.text = doc_index
                    .get(run.text.as_usize())
                    .copied()
                    .ok_or(bad("text index"))?;
                push_run(side, &mut cursor, run)
            };
            let counts = (n as u32, maps);
            let end = match neighbours.as_mut() {
                Some(neighbours) => columns::decode_block(
                    (&block, self.version),
                    seq,
                    ops,
                    counts,
                    neighbours,
                    &mut side,
                    push,
                )?,
                None => snapshot_history::decode_block(&block, seq, ops, counts, &mut side, push)?,
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
            if matches!(
                r.kind,
                OpKind::Insert { .. } | OpKind::MarkStart { .. } | OpKind::MarkEnd { .. }
            ) {
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
        let bad = |what| Error::Inconsistent { what };
        let i = unloaded.index as usize;
        let range = head.text_range(i)?;
        let segs = loaded.segments.get(i).ok_or(bad("snapshot text index"))?;
        let first_runs = loaded.first_runs.get(i).ok_or(bad("snapshot text index"))?;
        let (items, covered) = items_from_history(
            (segs, first_runs),
            log,
            t,
            range,
            (self.trimmed, self.meta.ops),
            unloaded.counts,
        )?;
        // Every insert and anchor of the text, each exactly once.
        let ops = loaded.inserted.get(t.as_usize()).copied().unwrap_or(0);
        if covered != ops || overlapping(segs, self.meta.ops) {
            return Err(bad("snapshot segments"));
        }
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
    /// alone, before the history is loaded (see [`PlainBuilder`]). Only
    /// for a text without marks. Checks what can be checked without the
    /// history; the rest is checked when [`Snapshot::fill_origins`] fills
    /// in the origins.
    pub fn plain_items(&self, head: &Head, log: &OpLog, unloaded: Unloaded) -> Result<TreeBuilder> {
        let bad = |what| Error::Inconsistent { what };
        let range = head.text_range(unloaded.index as usize)?;
        // Overlapping segments are caught when the origins are filled in:
        // until then no seq is looked up.
        if unloaded.counts.anchors > 0 {
            return Err(bad("snapshot segments"));
        }
        let value = self.store.get(&key(KEY_SEGMENTS, unloaded.index));
        let raw = self.unpack_segments(value.unwrap_or(&[]))?;
        let segs = SegmentReader::new(&raw)?;
        let mut built = PlainBuilder::new(log.content(), range, segs.len())?;
        let ops = self.meta.ops;
        segs.for_each(|seg| {
            if seg.seq + seg.len > ops {
                return Err(bad("segment"));
            }
            built.push(seg)
        })?;
        built.finish(unloaded.counts)
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
        let limits = (self.trimmed, self.meta.ops);
        let (out, covered, snapshot_chars) = fill_origins(log, t, items, limits)?;
        if loaded.inserted.get(t.as_usize()).copied().unwrap_or(0) != covered
            || overlapping(&snapshot_chars, self.meta.ops)
        {
            return Err(Error::Inconsistent {
                what: "snapshot segments",
            });
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
        let bad = |what| Error::Inconsistent { what };
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
        self.text_ranges.get(i).cloned().ok_or(Error::Inconsistent {
            what: "snapshot text index",
        })
    }
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

/// Checks one op run read from a block (its text the document's)
/// against the log built so far and appends it (inserts split where
/// their chars' visibility changes).
fn push_run(log: &mut OpLog, cursor: &mut SegmentCursor<'_>, run: OpRun) -> Result<()> {
    let bad = |what| Error::Inconsistent { what };
    let OpRun {
        seq,
        len,
        text,
        kind,
    } = run;
    let origins = |log: &OpLog, left: Seq, right: Seq| {
        check::origin(log, left, text, seq) && check::origin(log, right, text, seq)
    };
    match kind {
        OpKind::Insert {
            origin_left,
            origin_right,
            ..
        } => {
            if !origins(log, origin_left, origin_right) {
                return Err(bad("origin"));
            }
            return push_insert(log, cursor, seq, len, text, (origin_left, origin_right));
        }
        OpKind::Delete { target, reversed } => {
            let lo = if reversed {
                target.checked_sub(len - 1)
            } else {
                Some(target)
            };
            let targets = lo.and_then(|lo| Some(lo..lo.checked_add(len)?));
            if !targets.is_some_and(|t| check::targets(log, t, text, seq)) {
                return Err(bad("delete targets"));
            }
        }
        OpKind::MarkStart {
            origin_left,
            origin_right,
            mark,
        } => {
            let expand = log.mark(mark).ok_or(bad("mark"))?.expand;
            let glued = check::glue(
                expand,
                false,
                check::named(origin_left),
                check::named(origin_right),
            );
            if glued.is_err() || !origins(log, origin_left, origin_right) {
                return Err(bad("mark glue"));
            }
        }
        OpKind::MarkEnd {
            origin_left,
            origin_right,
            mark,
        } => {
            if !origins(log, origin_left, origin_right) {
                return Err(bad("origin"));
            }
            let m = log.mark(mark).ok_or(bad("mark"))?;
            let (start, open, expand) = (m.start, m.end == NO_SEQ, m.expand);
            let start_text = run_at(log, start).ok_or(bad("mark start"))?.text;
            if !check::mark_end(start, start_text, open, text, seq) {
                return Err(bad("mark start"));
            }
            let glued = check::glue(
                expand,
                true,
                check::named(origin_left),
                check::named(origin_right),
            );
            if glued.is_err() {
                return Err(bad("mark end"));
            }
            log.end_mark(mark, seq).ok_or(bad("mark end"))?;
        }
        // The block's reader records map ops.
        OpKind::MapSet { .. } => return Err(bad("map op")),
        OpKind::Cancel { target } => {
            // A shallow snapshot's root ops are stand-ins: no cancel of
            // one is written (see `Doc::shallow_snapshot`).
            if target < cursor.trimmed {
                return Err(bad("cancel of a root op"));
            }
            for i in 0..len {
                let (op, t) = (seq + i, target.checked_add(i).ok_or(bad("cancel target"))?);
                let peers = (log.seq_to_id(t).peer, log.seq_to_id(op).peer);
                if !check::cancel_targets(log, t..t + 1, (text, op), peers) {
                    return Err(bad("cancel target"));
                }
            }
            log.push_op_unmerged(run);
            // The segments hold the texts as the cancels left them.
            log.record_cancels(&run)?;
            return Ok(());
        }
    }
    log.push_op_unmerged(run);
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
    origins: (Seq, Seq),
) -> Result<()> {
    let bad = |what| Error::Inconsistent { what };
    log.push_insert_pieces((seq, len, text), origins, |at, end| {
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
        Ok((upto, byte_start, bytes))
    })
}

/// Per text and segment, the index of the op run holding the segment's
/// first seq: `order` lists all segments by seq (packed as seq << 32 |
/// position in the concatenation of `segments`), so one walk beside the
/// runs finds them all.
fn first_runs(ops: &Runs, order: &[u64], segments: &[Vec<Segment>]) -> Vec<Vec<u32>> {
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

    /// Pushes the op run `seq..seq + len` of text 0 that `kind` makes
    /// (as a block's reader would, with the log) onto a log holding the
    /// start anchor 0 of a mark that expands after (glued to the char
    /// after it) and the inserts 1..4, all of text 0.
    fn push(seq: Seq, len: u32, kind: impl FnOnce(&mut OpLog) -> Result<OpKind>) -> Result<()> {
        push_in(0, seq, len, kind)
    }

    /// As [`push`], into a shallow snapshot's history whose root is the
    /// seqs below `trimmed`.
    fn push_in(
        trimmed: Seq,
        seq: Seq,
        len: u32,
        kind: impl FnOnce(&mut OpLog) -> Result<OpKind>,
    ) -> Result<()> {
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
            trimmed,
            root_text: false,
        };
        let kind = kind(&mut log)?;
        push_run(
            &mut log,
            &mut cursor,
            OpRun {
                seq,
                len,
                text,
                kind,
            },
        )
    }

    #[test]
    fn deletes_name_earlier_chars_only() {
        let delete =
            |target, reversed| move |_: &mut OpLog| Ok(OpKind::Delete { target, reversed });
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
        // What a block's reader makes of a mark start at seq 4.
        let start = |left, right| {
            move |log: &mut OpLog| {
                let expand = crate::style::ExpandType::After;
                let value = crate::value::Value::Bool(true);
                Ok(OpKind::MarkStart {
                    origin_left: left,
                    origin_right: right,
                    mark: log.start_mark("bold", value, expand, 4),
                })
            }
        };
        assert!(push(4, 1, start(NO_SEQ, 2)).is_ok());
        assert!(push(4, 1, start(NO_SEQ, NO_SEQ)).is_ok());
        // Glued on the wrong side; the anchor, the op itself, past the
        // log (which the loader used to take).
        assert!(push(4, 1, start(2, NO_SEQ)).is_err());
        assert!(push(4, 1, start(NO_SEQ, 0)).is_err());
        assert!(push(4, 1, start(NO_SEQ, 4)).is_err());
        assert!(push(4, 1, start(NO_SEQ, 7)).is_err());
        // What a block's reader makes of a mark end at seq 4 whose start
        // is op `start` (`read_mark_end` refuses an op that starts no mark).
        let end = |left, right, start| {
            move |log: &mut OpLog| {
                let (mark, _) = log
                    .mark_started_by(start)
                    .ok_or(Error::Inconsistent { what: "mark start" })?;
                Ok(OpKind::MarkEnd {
                    origin_left: left,
                    origin_right: right,
                    mark,
                })
            }
        };
        // The mark expands after: its end is glued to the char after it.
        assert!(push(4, 1, end(NO_SEQ, 2, 0)).is_ok());
        assert!(push(4, 1, end(2, NO_SEQ, 0)).is_err());
        assert!(push(4, 1, end(NO_SEQ, 9, 0)).is_err());
        // Not a start anchor; not an earlier op.
        assert!(push(4, 1, end(NO_SEQ, 2, 2)).is_err());
        assert!(push(4, 1, end(NO_SEQ, 2, 4)).is_err());
    }

    #[test]
    fn cancels_of_a_shallow_roots_ops_are_refused() {
        // A delete at seq 4 (of char 1), cancelled by op 5.
        let cancel = |target| {
            move |log: &mut OpLog| {
                log.push_op_unmerged(OpRun {
                    seq: 4,
                    len: 1,
                    text: TextIdx::new(0),
                    kind: OpKind::Delete {
                        target: 1,
                        reversed: false,
                    },
                });
                Ok(OpKind::Cancel { target })
            }
        };
        assert!(push_in(0, 5, 1, cancel(4)).is_ok());
        assert!(push_in(4, 5, 1, cancel(4)).is_ok());
        // The delete, or the mark start at seq 0, in the root.
        let root_op = Err(Error::Inconsistent {
            what: "cancel of a root op",
        });
        assert_eq!(push_in(5, 5, 1, cancel(4)), root_op);
        assert_eq!(push_in(1, 5, 1, cancel(0)), root_op);
    }
}
