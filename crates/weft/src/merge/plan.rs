//! Checking an [`Update`] against a document without changing it.
//!
//! [`plan`] reads the document and the update without changing anything:
//! it decides whether every dependency is known (else the update must wait),
//! drops what the document already has, assigns the seqs the new ops will
//! get and resolves every id an op refers to, checking that it names an
//! insert of the same text made before the op. Only a plan that passed all
//! checks reaches [`super::apply()`], which fails only on a bug of ours. So a rejected update leaves
//! the document exactly as it was.

use std::collections::HashMap;
use std::ops::Range;

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::id::{Counter, OpId, PeerId, Seq, TextIdx, NO_SEQ};
use crate::id::{MapSetIdx, MarkIdx};
use crate::oplog::check::{self, Earlier};
use crate::oplog::{OpKind, OpLog, OpRun, NO_CONTENT};
use crate::style::ExpandType;
use crate::text::TextTable;

use super::bits::SeqBits;
use super::update::{Update, UpdateKind, UpdateRun};

/// A change of the update that the document lacks (possibly only its
/// suffix), with everything resolved.
#[derive(Debug)]
pub(super) struct PlannedChange {
    pub peer: PeerId,
    pub counter: Counter,
    pub len: u32,
    pub deps: SmallVec<[Seq; 2]>,
    pub ops: Range<usize>,
}

/// The checked, resolved form of an update. See the module doc.
///
/// Its ops are in the log's own form ([`OpRun`]), exactly as the log
/// will hold them: seqs numbered from the log's next one, every reference
/// resolved to a seq, a delete cut into runs of consecutive targets, and
/// the indexes of inserted text, marks and map writes those the log's
/// tables give them when [`super::apply()`] adds the update's entries in
/// plan order (which it checks). `sources` says where in the update each
/// of those entries is.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(super) new_texts: Vec<Box<str>>,
    /// The texts the update edits.
    pub(super) touched: Vec<TextIdx>,
    pub(super) changes: Vec<PlannedChange>,
    /// Op runs; they own nothing, so dropping them is free.
    pub(super) ops: Vec<OpRun>,
    pub(super) sources: Sources,
}

/// Where the table entries of a plan's new ops are in its update, in op
/// order, one list per table.
#[derive(Debug, Default)]
pub(super) struct Sources {
    /// Per insert with text: its first byte in the update's content (its
    /// length is the run's `bytes`).
    pub content: Vec<u32>,
    /// Per mark start: its mark in the update's marks, and its rule.
    pub marks: Vec<(u32, ExpandType)>,
    /// Per map write: its index in the update's map writes.
    pub map_sets: Vec<u32>,
}

/// Whether an update can be applied now.
#[derive(Debug)]
pub(crate) enum Readiness {
    /// Every dependency is known; here is what to do.
    Ready(Plan),
    /// Some ops it builds on are missing (see [`ready_changes`] for what
    /// it waits for).
    Missing,
}

/// Looks up the seqs of ops, in the document or planned earlier in the
/// update.
struct Resolver<'a> {
    log: &'a OpLog,
    /// Planned changes: (peer, first counter, end counter, first seq).
    changes: Vec<(PeerId, Counter, Counter, Seq)>,
    /// Per peer, indexes into `changes` in counter order.
    by_peer: HashMap<PeerId, Vec<usize>>,
    /// Planned insert runs: (first seq, len, text), when the update edits
    /// several texts.
    inserts: Vec<(Seq, u32, TextIdx)>,
    /// When the update edits a single text: that text, and one bit per
    /// planned op, set for inserts, which answers "is an insert of that
    /// text" with a bit test.
    single_text: Option<(TextIdx, SeqBits)>,
    /// Index into `inserts` of the last hit: references cluster.
    hint: std::cell::Cell<usize>,
    /// Planned start anchors: (seq, text, expand rule, the mark the log
    /// will give it), ascending seqs.
    anchors: Vec<(Seq, TextIdx, ExpandType, MarkIdx)>,
    /// Start seqs of the marks whose end this plan adds.
    ended: Vec<Seq>,
}

impl Resolver<'_> {
    fn add_change(&mut self, peer: PeerId, counters: Range<Counter>, seq: Seq) {
        self.by_peer
            .entry(peer)
            .or_default()
            .push(self.changes.len());
        self.changes.push((peer, counters.start, counters.end, seq));
    }

    /// The planned change holding op `id`: (first counter, end, first seq).
    #[inline]
    fn planned(&self, id: OpId) -> Option<(Counter, Counter, Seq)> {
        // Most references point into the latest change.
        self.latest(id).or_else(|| self.planned_earlier(id))
    }

    /// [`Resolver::planned`] if the change is the latest one.
    #[inline]
    fn latest(&self, id: OpId) -> Option<(Counter, Counter, Seq)> {
        self.changes
            .last()
            .filter(|c| holds(c, id))
            .map(|c| (c.1, c.2, c.3))
    }

    /// [`Resolver::planned`] past the latest change.
    #[inline(never)]
    fn planned_earlier(&self, id: OpId) -> Option<(Counter, Counter, Seq)> {
        let list = self.by_peer.get(&id.peer)?;
        let i = list.partition_point(|&c| self.changes.get(c).is_some_and(|c| c.2 <= id.counter));
        let c = self.changes.get(*list.get(i)?)?;
        holds(c, id).then_some((c.1, c.2, c.3))
    }

    /// Resolves the start op of a mark ended by an op at `before`: it must
    /// be a start anchor in `text` whose mark has no end yet. Returns the
    /// mark (as the log has it or will give it) and its expand rule.
    fn mark_start(
        &mut self,
        id: OpId,
        text: TextIdx,
        before: Seq,
    ) -> Result<(MarkIdx, ExpandType)> {
        // (seq, its text, whether its mark has no end yet, the rule, the mark)
        let found = if let Some((start, _, seq0)) = self.planned(id) {
            let seq = seq0 + (id.counter - start);
            let i = self.anchors.binary_search_by_key(&seq, |a| a.0).ok();
            i.and_then(|i| self.anchors.get(i))
                .map(|&(_, t, expand, mark)| (seq, t, true, expand, mark))
        } else {
            self.log.id_to_seq(id).and_then(|seq| {
                let (mark, t) = self.log.mark_started_by(seq)?;
                let m = self.log.mark(mark)?;
                Some((seq, t, m.end == NO_SEQ, m.expand, mark))
            })
        };
        match found {
            Some((seq, t, open, expand, mark))
                if check::mark_end(seq, t, open && !self.ended.contains(&seq), text, before) =>
            {
                self.ended.push(seq);
                Ok((mark, expand))
            }
            _ => Err(Error::UnknownId(id)),
        }
    }

    /// Resolves the origins of a mark's start (`end` false) or end
    /// anchor under rule `expand`, which must be glued as
    /// [`check::glue`] says.
    fn glue(
        &self,
        (left, right): (Option<OpId>, Option<OpId>),
        (expand, end): (ExpandType, bool),
        text: TextIdx,
        before: Seq,
    ) -> Result<(Seq, Seq)> {
        // The id named on the side the rule leaves empty is unknown there.
        check::glue(expand, end, left, right).map_err(Error::UnknownId)?;
        Ok((
            self.origin(left, text, before)?,
            self.origin(right, text, before)?,
        ))
    }

    /// Records a planned insert run, in the one structure
    /// [`Resolver::planned_inserts`] will read.
    fn add_insert(&mut self, seq: Seq, len: u32, text: TextIdx) {
        match &mut self.single_text {
            Some((_, bits)) => {
                let set = bits.set(seq..seq + len);
                debug_assert!(set, "planned seqs are in the update's range");
            }
            None => self.inserts.push((seq, len, text)),
        }
    }

    /// Whether the planned ops `seqs` are all inserts into `text` (what
    /// [`PlannedSoFar`] answers).
    #[inline]
    fn planned_inserts(&self, seqs: Range<Seq>, text: TextIdx) -> bool {
        if let Some((only, bits)) = &self.single_text {
            return *only == text
                && if seqs.len() == 1 {
                    bits.get(seqs.start)
                } else {
                    bits.all_set(seqs)
                };
        }
        let mut at = seqs.start;
        let hint = self.hint.get();
        let mut i = match self.inserts.get(hint) {
            Some(&(start, len, _)) if start <= at && at < start + len => hint,
            _ => self.inserts.partition_point(|r| r.0 + r.1 <= at),
        };
        self.hint.set(i);
        while at < seqs.end {
            match self.inserts.get(i) {
                Some(&(start, len, t)) if start <= at && t == text => {
                    at = start + len;
                    i += 1;
                }
                _ => return false,
            }
        }
        true
    }

    /// Resolves ops `id.counter..id.counter + n` of `id.peer`, which must be
    /// inserts into `text` made before seq `before`, to ascending seq ranges
    /// in `out` (cleared first).
    fn chars(
        &self,
        id: OpId,
        n: u32,
        (text, before): (TextIdx, Seq),
        out: &mut Vec<Range<Seq>>,
    ) -> Result<()> {
        self.resolve(id, n, out, |seqs, planned| {
            Ok(if planned {
                check::targets(&PlannedSoFar(self), seqs, text, before)
            } else {
                check::targets(self.log, seqs, text, before)
            })
        })
    }

    /// Resolves ops `id.counter..id.counter + n` of `id.peer`, which
    /// cancel op `before` of `text` made by `peer` cancels, to ascending
    /// seq ranges in `out.pieces` (cleared first); they must meet
    /// [`check::cancel_targets`] (ops planned earlier in this update are
    /// looked up in `out.ops`).
    fn cancelled(
        &self,
        id: OpId,
        n: u32,
        (text, before, peer): (TextIdx, Seq, PeerId),
        out: &mut Planned,
    ) -> Result<()> {
        let planned_ops = &out.ops;
        self.resolve(id, n, &mut out.pieces, |seqs, planned| {
            let peers = (id.peer, peer);
            if planned {
                let runs = check::Runs(planned_ops);
                Ok(check::cancel_targets(&runs, seqs, (text, before), peers))
            } else if seqs.start < self.log.trimmed_end() {
                // A shallow document's root ops are stand-ins.
                Err(Error::TrimmedHistory)
            } else {
                Ok(check::cancel_targets(self.log, seqs, (text, before), peers))
            }
        })
    }

    /// Resolves ops `id.counter..id.counter + n` of `id.peer` to
    /// ascending seq ranges in `out` (cleared first), one piece per change
    /// they fall in, each of which `ok(seqs, planned)` must take (planned:
    /// an op of this update, else of the log).
    #[inline(always)]
    fn resolve(
        &self,
        id: OpId,
        n: u32,
        out: &mut Vec<Range<Seq>>,
        mut ok: impl FnMut(Range<Seq>, bool) -> Result<bool>,
    ) -> Result<()> {
        out.clear();
        let mut counter = id.counter;
        let end = id.counter.checked_add(n).ok_or(Error::UnknownId(id))?;
        while counter < end {
            let here = OpId::new(id.peer, counter);
            // The latest planned change first (most deletes remove what
            // was just typed), then the log, then earlier changes: the
            // log and the plan hold different ops.
            let latest = self.latest(here);
            let in_log = match latest {
                Some(_) => None,
                None => self.log.id_to_seq(here),
            };
            let (seqs, planned) = if let Some(seq) = in_log {
                let change = self
                    .log
                    .changes()
                    .get(self.log.change_index(seq))
                    .ok_or(Error::UnknownId(here))?;
                let k = (end - counter).min(change.counter_end() - counter);
                (seq..seq + k, false)
            } else if let Some((start, stop, seq0)) = latest.or_else(|| self.planned_earlier(here))
            {
                let k = (end - counter).min(stop - counter);
                let seq = seq0 + (counter - start);
                (seq..seq + k, true)
            } else {
                return Err(Error::UnknownId(here));
            };
            if !ok(seqs.clone(), planned)? {
                return Err(Error::UnknownId(here));
            }
            counter += seqs.end - seqs.start;
            match out.last_mut() {
                Some(last) if last.end == seqs.start => last.end = seqs.end,
                _ => out.push(seqs),
            }
        }
        Ok(())
    }

    /// Resolves one origin (`None`: start or end of the text). A one-op
    /// [`Resolver::chars`] that looks in the update first: origins are two
    /// per insert run, and going through `chars` cost about twice as many
    /// instructions here (callgrind, B4 import), and inlining its update
    /// part saves a sixth more.
    #[inline(always)]
    fn origin(&self, id: Option<OpId>, text: TextIdx, before: Seq) -> Result<Seq> {
        let Some(id) = id else {
            return Ok(NO_SEQ);
        };
        // Most origins point into the same update, often its latest change.
        if let Some((start, _, seq0)) = self.planned(id) {
            let seq = seq0 + (id.counter - start);
            return if check::origin(&PlannedSoFar(self), seq, text, before) {
                Ok(seq)
            } else {
                Err(Error::UnknownId(id))
            };
        }
        self.origin_in_log(id, text, before)
    }

    /// [`Resolver::origin`] for an op the document has.
    #[inline(never)]
    fn origin_in_log(&self, id: OpId, text: TextIdx, before: Seq) -> Result<Seq> {
        match self.log.id_to_seq(id) {
            Some(seq) if check::origin(self.log, seq, text, before) => Ok(seq),
            _ => Err(Error::UnknownId(id)),
        }
    }
}

/// The ops a [`Resolver`] planned so far, as the rules of
/// [`check`] ask about them.
struct PlannedSoFar<'r, 'a>(&'r Resolver<'a>);

impl Earlier for PlannedSoFar<'_, '_> {
    #[inline(always)]
    fn inserts_into(&self, seqs: Range<Seq>, text: TextIdx) -> bool {
        self.0.planned_inserts(seqs, text)
    }

    /// Not known here: the planned runs are (see [`check::Runs`]).
    fn cancellable(&self, _: Range<Seq>, _: TextIdx) -> bool {
        false
    }
}

/// Whether planned change `c` (peer, first counter, end counter, first
/// seq) holds op `id`.
#[inline]
fn holds(c: &(PeerId, Counter, Counter, Seq), id: OpId) -> bool {
    c.0 == id.peer && c.1 <= id.counter && id.counter < c.2
}

/// Which changes of `update` a document that knows `known(peer)` ops of
/// each peer lacks, as (change index, ops of its start already known);
/// or, when something they build on is missing, one op the document must
/// learn first. Copies only the versions of the peers the update names.
pub(crate) fn missing_parts(
    update: &Update,
    known: impl Fn(PeerId) -> Counter,
) -> std::result::Result<Vec<(usize, u32)>, OpId> {
    let mut seen: HashMap<PeerId, Counter> = HashMap::new();
    let have = |seen: &HashMap<PeerId, Counter>, peer: PeerId| {
        seen.get(&peer).copied().unwrap_or_else(|| known(peer))
    };
    let mut parts = Vec::new();
    for (i, change) in update.changes.iter().enumerate() {
        let start = have(&seen, change.peer);
        let end = change.counter + change.len;
        if start >= end {
            continue;
        }
        if let Some(blocker) = change.waits_for(|p| have(&seen, p)) {
            return Err(blocker);
        }
        seen.insert(change.peer, end);
        parts.push((i, start - change.counter));
    }
    Ok(parts)
}

/// For an update that is not ready as a whole: which of its changes a
/// document that knows `known(peer)` ops of each peer could apply now
/// (each ready change builds only on known ops and on earlier ready
/// changes), and for the others an op each waits for (not known and not
/// in a ready change), with its index. Changes the document already has
/// are in neither list.
pub(crate) fn ready_changes(
    update: &Update,
    known: impl Fn(PeerId) -> Counter,
) -> (Vec<usize>, Vec<(OpId, usize)>) {
    let mut seen: HashMap<PeerId, Counter> = HashMap::new();
    let have = |seen: &HashMap<PeerId, Counter>, peer: PeerId| {
        seen.get(&peer).copied().unwrap_or_else(|| known(peer))
    };
    let (mut ready, mut blockers) = (Vec::new(), Vec::new());
    for (i, change) in update.changes.iter().enumerate() {
        let start = have(&seen, change.peer);
        let end = change.counter + change.len;
        if start >= end {
            continue;
        }
        match change.waits_for(|p| have(&seen, p)) {
            Some(b) => blockers.push((b, i)),
            None => {
                seen.insert(change.peer, end);
                ready.push(i);
            }
        }
    }
    (ready, blockers)
}

/// Checks `update` against the document (`log`, `texts`) and resolves it.
///
/// # Errors
///
/// [`Error::UnknownId`] when an op refers to an op that is neither known
/// nor in its causal past as declared; [`Error::HistoryFull`] when the
/// document cannot number the new ops; [`Error::TrimmedHistory`] in a
/// shallow document, for a change whose past lacks part of its root.
pub(crate) fn plan(log: &OpLog, texts: &TextTable, update: &Update) -> Result<Readiness> {
    match missing_parts(update, |p| log.known_end(p)) {
        Ok(parts) => plan_parts(log, texts, update, parts).map(Readiness::Ready),
        Err(_) => Ok(Readiness::Missing),
    }
}

/// [`plan`] for the changes `parts` of `update` (index, ops of its start
/// the document has), which must be ready: each builds only on ops the
/// document has or on earlier parts (as [`missing_parts`] finds them).
///
/// # Errors
///
/// As [`plan`].
pub(crate) fn plan_parts(
    log: &OpLog,
    texts: &TextTable,
    update: &Update,
    parts: Vec<(usize, u32)>,
) -> Result<Plan> {
    // Texts: the update's text indexes -> the document's (new ones appended).
    let (new_texts, text_map) = map_texts(texts, update);

    let total: u64 = parts
        .iter()
        .filter_map(|&(i, skip)| update.changes.get(i).map(|c| u64::from(c.len - skip)))
        .sum();
    // Seqs and content offsets are u32.
    let content_end = log.content().len() as u64 + update.content.len() as u64;
    if u64::from(log.next_seq()) + total >= u64::from(NO_SEQ) || content_end >= u64::from(u32::MAX)
    {
        return Err(Error::HistoryFull);
    }

    let mut resolver = Resolver {
        log,
        changes: Vec::with_capacity(parts.len()),
        by_peer: HashMap::new(),
        inserts: Vec::new(),
        // The bit per op only while that is about the size of the update
        // (else the run list).
        single_text: match text_map.as_slice() {
            [only] => {
                let seqs = log.next_seq()..log.next_seq() + total as Seq;
                SeqBits::for_update(seqs, update.runs.len()).map(|bits| (*only, bits))
            }
            _ => None,
        },
        hint: std::cell::Cell::new(0),
        anchors: Vec::new(),
        ended: Vec::new(),
    };
    let mut changes = Vec::with_capacity(parts.len());
    let mut out = Planned {
        ops: Vec::with_capacity(update.runs.len()),
        sources: Sources::default(),
        pieces: Vec::new(),
        content_end: log.content().len() as u32,
        marks_end: log.marks().len() as u32,
        map_sets_end: log.map_sets().len() as u32,
    };
    let mut seq = log.next_seq();
    for (i, skip) in parts {
        let change = update.changes.get(i).ok_or(Error::Internal {
            what: "planned change",
        })?;
        let counter = change.counter + skip;
        let len = change.len - skip;
        let deps: SmallVec<[Seq; 2]> = if skip > 0 {
            SmallVec::new()
        } else {
            change
                .deps
                .iter()
                .map(|&d| {
                    log.id_to_seq(d)
                        .or_else(|| resolver.planned(d).map(|c| c.2 + (d.counter - c.0)))
                        .ok_or(Error::UnknownId(d))
                })
                .collect::<Result<_>>()?
        };
        if log.trimmed().is_some() {
            // A shallow document merges only changes made on top of its
            // whole root (see `oplog/trimmed.rs`).
            let past: SmallVec<[Seq; 2]> = if skip > 0 {
                let prev = OpId::new(change.peer, counter - 1);
                log.id_to_seq(prev).into_iter().collect()
            } else {
                deps.clone()
            };
            if !log.covers_root(&past) {
                return Err(Error::TrimmedHistory);
            }
        }
        resolver.add_change(change.peer, counter..counter + len, seq);
        let first_op = out.ops.len();
        // Walk the change's runs, skipping the ops already known.
        let mut op_counter = change.counter;
        let runs = update
            .runs
            .get(change.runs.clone())
            .ok_or(Error::Internal {
                what: "change runs",
            })?;
        for run in runs {
            let run_end = op_counter + run.len;
            if run_end <= counter {
                op_counter = run_end;
                continue;
            }
            let offset = counter.saturating_sub(op_counter);
            let n = run.len - offset;
            let text = if matches!(run.kind, UpdateKind::MapSet { .. }) {
                // A map op edits no text.
                TextIdx::default()
            } else {
                text_map
                    .get(run.text as usize)
                    .copied()
                    .ok_or(Error::Inconsistent { what: "text index" })?
            };
            let piece = Piece {
                first: OpId::new(change.peer, op_counter + offset),
                offset,
                len: n,
                text,
                seq,
            };
            resolver.plan_run(update, run, &piece, &mut out)?;
            seq += n;
            op_counter = run_end;
        }
        changes.push(PlannedChange {
            peer: change.peer,
            counter,
            len,
            deps,
            ops: first_op..out.ops.len(),
        });
    }
    Ok(Plan {
        new_texts,
        touched: {
            let mut t = text_map;
            t.sort_unstable();
            t.dedup();
            t
        },
        changes,
        ops: out.ops,
        sources: out.sources,
    })
}

/// The update's text indexes mapped to the document's, and the names of
/// the texts the document does not have yet (they get the next indexes).
fn map_texts(texts: &TextTable, update: &Update) -> (Vec<Box<str>>, Vec<TextIdx>) {
    let mut new_texts: Vec<Box<str>> = Vec::new();
    let mut new_index: HashMap<&str, TextIdx> = HashMap::new();
    let mut text_map = Vec::with_capacity(update.texts.len());
    for name in &update.texts {
        let idx = match texts.find(name) {
            Some(i) => i,
            None => *new_index.entry(name).or_insert_with(|| {
                new_texts.push(name.clone());
                TextIdx::new((texts.len() + new_texts.len() - 1) as u32)
            }),
        };
        text_map.push(idx);
    }
    (new_texts, text_map)
}

/// What [`Resolver::plan_run`] writes: [`Plan::ops`] and
/// [`Plan::sources`], and the ends the log's tables will have.
struct Planned {
    ops: Vec<OpRun>,
    sources: Sources,
    /// The chars a delete removes (reused from delete to delete).
    pieces: Vec<Range<Seq>>,
    /// The length of the log's content once the planned text is added.
    content_end: u32,
    /// The number of marks once the planned ones are added.
    marks_end: u32,
    /// The number of map writes once the planned ones are added.
    map_sets_end: u32,
}

/// The part of an update run the document lacks (all of it, or the tail
/// after ops it has).
struct Piece {
    /// The id of the piece's first op.
    first: OpId,
    /// Ops of the run before the piece (already known).
    offset: u32,
    len: u32,
    /// The document's index of the run's text.
    text: TextIdx,
    /// The seq the piece's first op gets.
    seq: Seq,
}

impl Resolver<'_> {
    /// Checks and resolves one piece of `run` into `ops`, recording what
    /// later ops of the update may refer to. (Pushing here, rather than
    /// returning the op, saves a copy per run: ~1 M instructions of a B4
    /// import.)
    #[inline(always)]
    fn plan_run(
        &mut self,
        update: &Update,
        run: &UpdateRun,
        p: &Piece,
        out: &mut Planned,
    ) -> Result<()> {
        let (text, seq) = (p.text, p.seq);
        let kind = match &run.kind {
            UpdateKind::Insert {
                left,
                right,
                content,
            } => {
                // A run cut by the known prefix starts after its previous
                // char, which the document already has.
                let left = if p.offset > 0 {
                    Some(OpId::new(p.first.peer, p.first.counter - 1))
                } else {
                    *left
                };
                let left = self.origin(left, text, seq)?;
                let right = self.origin(*right, text, seq)?;
                self.add_insert(seq, p.len, text);
                // Offsets fit a u32: `plan` checked the content's length.
                let (byte_start, bytes) = match content {
                    Some(range) => {
                        let skip = if p.offset > 0 {
                            let s = update.content.get(range.clone()).unwrap_or("");
                            s.char_indices()
                                .nth(p.offset as usize)
                                .map_or(s.len(), |(b, _)| b)
                        } else {
                            0
                        };
                        let bytes = (range.len() - skip) as u32;
                        out.sources.content.push((range.start + skip) as u32);
                        let start = out.content_end;
                        out.content_end += bytes;
                        (start, bytes)
                    }
                    None => (NO_CONTENT, 0),
                };
                OpKind::Insert {
                    origin_left: left,
                    origin_right: right,
                    byte_start,
                    bytes,
                }
            }
            UpdateKind::MarkStart {
                left,
                right,
                expand,
                mark,
            } => {
                let (left, right) = self.glue((*left, *right), (*expand, false), text, seq)?;
                let new = MarkIdx::new(out.marks_end);
                out.marks_end += 1;
                out.sources.marks.push((*mark, *expand));
                self.anchors.push((seq, text, *expand, new));
                OpKind::MarkStart {
                    origin_left: left,
                    origin_right: right,
                    mark: new,
                }
            }
            UpdateKind::MarkEnd { left, right, start } => {
                let (mark, expand) = self.mark_start(*start, text, seq)?;
                let (left, right) = self.glue((*left, *right), (expand, true), text, seq)?;
                OpKind::MarkEnd {
                    origin_left: left,
                    origin_right: right,
                    mark,
                }
            }
            UpdateKind::Delete { target, reversed } => {
                let first = run
                    .delete_target(p.offset)
                    .ok_or(Error::UnknownId(*target))?;
                let low = if *reversed {
                    OpId::new(first.peer, first.counter - (p.len - 1))
                } else {
                    first
                };
                self.chars(low, p.len, (text, seq), &mut out.pieces)?;
                // One log run per piece of consecutive targets, in the
                // order the ops delete them.
                let mut at = seq;
                let mut push = |piece: &Range<Seq>| {
                    let len = piece.end - piece.start;
                    out.ops.push(OpRun {
                        seq: at,
                        len,
                        text,
                        kind: OpKind::Delete {
                            target: if *reversed {
                                piece.end - 1
                            } else {
                                piece.start
                            },
                            reversed: *reversed,
                        },
                    });
                    at += len;
                };
                if *reversed {
                    out.pieces.iter().rev().for_each(&mut push);
                } else {
                    out.pieces.iter().for_each(&mut push);
                }
                return Ok(());
            }
            UpdateKind::Cancel { target } => {
                let first = OpId::new(target.peer, target.counter.wrapping_add(p.offset));
                if target.counter.checked_add(p.offset).is_none() {
                    return Err(Error::UnknownId(*target));
                }
                self.cancelled(first, p.len, (text, seq, p.first.peer), out)?;
                // One log run per piece of consecutive targets.
                let mut at = seq;
                for i in 0..out.pieces.len() {
                    let Some(piece) = out.pieces.get(i).cloned() else {
                        break;
                    };
                    let len = piece.end - piece.start;
                    out.ops.push(OpRun {
                        seq: at,
                        len,
                        text,
                        kind: OpKind::Cancel {
                            target: piece.start,
                        },
                    });
                    at += len;
                }
                return Ok(());
            }
            UpdateKind::MapSet { set } => {
                if update.map_sets.get(*set as usize).is_none() || p.len != 1 {
                    return Err(Error::Inconsistent { what: "map op" });
                }
                out.sources.map_sets.push(*set);
                let new = MapSetIdx::new(out.map_sets_end);
                out.map_sets_end += 1;
                OpKind::MapSet { set: new }
            }
        };
        out.ops.push(OpRun {
            seq,
            len: p.len,
            text,
            kind,
        });
        Ok(())
    }
}
