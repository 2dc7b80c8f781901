//! The history of a document: every op it knows, grouped into changes.
//!
//! The log owns:
//! - the peer table (peer id <-> small index),
//! - [`Change`]s in local order (by [`Seq`]), which together cover seqs
//!   `0..next_seq` without gaps, plus a per-peer index for id lookups,
//! - [`OpRun`]s, also in seq order and covering the same seqs,
//! - `content`: the UTF-8 text of every insert, in arrival order,
//! - the committed version (vector and heads) and the open local change.
//!
//! Invariants: changes and op runs are sorted by seq and contiguous; each
//! peer's changes have increasing, contiguous counters; a change's deps are
//! seqs lower than its own.

mod cancel;
mod change;
pub(crate) mod check;
mod commits;
mod deleters;
mod heads;
mod map;
mod mark;
mod missing;
pub(crate) mod object;
mod op;
mod runs;
mod trimmed;
pub(crate) use trimmed::minus;
mod versions;

pub(crate) use cancel::{CharText, Flip, Flipped};
pub(crate) use change::Change;
pub(crate) use commits::{AddedChange, CommitInfo};
use heads::Heads;
pub(crate) use map::{is_reserved, keys_of, public_name, MapNames, MapSet, PublicNames, REGISTERS};
pub(crate) use mark::{KeyTable, Mark};
pub(crate) use object::{Object, Objects, BLOCK_KEY_PREFIX, EMBED_CHAR};
pub(crate) use op::{origins_at, AnchorOp, OpKind, OpRun, NO_CONTENT};
pub(crate) use runs::Runs;

use std::collections::BTreeMap;
use std::ops::Range;

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::id::{
    Counter, IdSpan, Lamport, MapIdx, MapSetIdx, MarkIdx, OpId, PeerId, PeerIdx, Seq, TextIdx,
    NO_SEQ,
};
use crate::style::ExpandType;
use crate::value::Value;
use crate::version::{Frontiers, VersionVector};

/// Peer ids in order of first appearance, with a reverse index.
#[derive(Debug, Clone, Default)]
pub(crate) struct PeerTable {
    ids: Vec<PeerId>,
    index: BTreeMap<PeerId, PeerIdx>,
}

impl PeerTable {
    /// The peer with index `idx` (which this table gave out).
    pub fn get(&self, idx: PeerIdx) -> PeerId {
        self.ids[idx.as_usize()]
    }

    /// The index of `peer`, if it is in the table.
    #[inline]
    pub fn find(&self, peer: PeerId) -> Option<PeerIdx> {
        self.index.get(&peer).copied()
    }

    /// The index of `peer`, added to the table if missing.
    pub fn intern(&mut self, peer: PeerId) -> PeerIdx {
        let next = PeerIdx::new(self.ids.len() as u32);
        let idx = *self.index.entry(peer).or_insert(next);
        if idx == next {
            self.ids.push(peer);
        }
        idx
    }
}

/// The deps of `change` in the dependency pool.
fn deps_in<'a>(pool: &'a [Seq], change: &Change) -> &'a [Seq] {
    let start = change.deps_start as usize;
    &pool[start..start + change.deps_len as usize]
}

/// The whole history of a document. See the module doc.
#[derive(Debug, Clone, Default)]
pub(crate) struct OpLog {
    peers: PeerTable,
    changes: Vec<Change>,
    /// The deps of all changes (see [`Change::deps_start`]).
    dep_pool: Vec<Seq>,
    /// Per peer (by [`PeerIdx`]): indexes into `changes`, by increasing
    /// counter.
    by_peer: Vec<Vec<u32>>,
    /// The op runs from seq `ops_from` on, in seq order.
    ops: Runs,
    /// 0, or while the op runs of a lazily imported snapshot's history
    /// are not loaded yet, the seq where the loaded runs start (see
    /// [`OpLog::defer_ops`]).
    ops_from: Seq,
    /// UTF-8 text of all inserts this document has content for.
    content: String,
    /// Every mark, in the order their start ops arrived.
    marks: Vec<Mark>,
    /// The style keys the marks use.
    keys: KeyTable,
    /// Every map op, in arrival order (persistent: a copy of the log
    /// shares them).
    map_sets: im::Vector<MapSet>,
    /// The names of the maps the map ops write.
    map_names: MapNames,
    /// The objects: inserts of one U+FFFC char that are an embed or a
    /// block marker, by the insert's seq.
    objects: Objects,
    /// Version of the committed changes.
    version: VersionVector,
    /// Heads of the committed changes, as seqs, sorted.
    heads: Heads,
    next_seq: Seq,
    /// One more than the largest Lamport timestamp of a committed op.
    next_lamport: Lamport,
    /// Whether the last change is the open local change.
    open: bool,
    /// Set on the history of a checked-out version (see
    /// `Doc::checkout`): local ops are refused.
    read_only: bool,
    /// Messages and timestamps of the commits given one.
    commit_infos: commits::CommitInfos,
    /// Set in a shallow document: the history it trimmed.
    trimmed: Option<Box<trimmed::Trimmed>>,
    /// Per cancelled op, how many cancels of it are not cancelled
    /// themselves (at least one; see [`cancel`]).
    cancels: cancel::Cancels,
    /// Which delete runs name which chars, once an undo needs it (see
    /// [`deleters`]).
    deleters: Option<Box<deleters::Deleters>>,
}

impl OpLog {
    /// [`Error::Detached`] if local ops are refused (the history of a
    /// checked-out version); every local edit checks it, also one that
    /// makes no op.
    #[inline]
    pub fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::Detached);
        }
        Ok(())
    }

    /// Refuses local ops from now on (see [`Error::Detached`]).
    pub fn set_read_only(&mut self) {
        self.read_only = true;
    }

    /// Number of ops known (the next seq).
    pub fn next_seq(&self) -> Seq {
        self.next_seq
    }

    /// The peer table.
    #[inline]
    pub fn peers(&self) -> &PeerTable {
        &self.peers
    }

    /// The changes, by seq.
    #[inline]
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    /// The op runs, by seq (from seq 0 unless [`OpLog::defer_ops`] left
    /// some unloaded).
    #[inline]
    pub fn ops(&self) -> &Runs {
        &self.ops
    }

    /// The text of every insert with content (runs point into it).
    #[inline]
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Every mark, by arrival of its start op.
    #[inline]
    pub fn marks(&self) -> &[Mark] {
        &self.marks
    }

    /// Mark `mark`, if there is one.
    #[inline]
    pub fn mark(&self, mark: MarkIdx) -> Option<&Mark> {
        self.marks.get(mark.as_usize())
    }

    /// The style keys the marks use.
    #[inline]
    pub fn keys(&self) -> &KeyTable {
        &self.keys
    }

    /// Appends inserted text; returns its byte offset in
    /// [`OpLog::content`]. Callers check that offsets fit a `u32`
    /// ([`OpLog::check_room`], or the plan of an update).
    #[inline]
    pub fn push_content(&mut self, s: &str) -> u32 {
        let start = self.content.len() as u32;
        self.content.push_str(s);
        start
    }

    /// As [`OpLog::push_content`], taking the text by value: into an
    /// empty log (a snapshot's first text) it is moved, not copied.
    pub fn push_content_owned(&mut self, s: String) -> u32 {
        if self.content.is_empty() {
            self.content = s;
            return 0;
        }
        self.push_content(&s)
    }

    /// Marks the history's op runs as not loaded: the log holds the
    /// changes of a snapshot (so local ops can go on top of them) but not
    /// its op runs, which [`OpLog::attach_history`] adds later. Until then
    /// only local inserts and deletes are taken, and no op before
    /// [`OpLog::next_seq`] (at this call) is looked up.
    pub fn defer_ops(&mut self) {
        debug_assert!(self.ops.is_empty() && self.marks.is_empty());
        self.ops_from = self.next_seq;
    }

    /// A log with the same changes and none of the op runs, text or
    /// marks, to decode deferred op runs into (see
    /// [`OpLog::attach_history`]).
    pub fn history_side(&self) -> OpLog {
        OpLog {
            peers: self.peers.clone(),
            changes: self.changes.clone(),
            dep_pool: self.dep_pool.clone(),
            by_peer: self.by_peer.clone(),
            ops: Runs::default(),
            ops_from: 0,
            content: String::new(),
            marks: Vec::new(),
            keys: KeyTable::default(),
            map_sets: im::Vector::new(),
            map_names: MapNames::default(),
            objects: Objects::new(),
            version: self.version.clone(),
            heads: self.heads.clone(),
            next_seq: self.next_seq,
            next_lamport: self.next_lamport,
            open: self.open,
            read_only: self.read_only,
            commit_infos: commits::CommitInfos::new(),
            trimmed: None,
            cancels: cancel::Cancels::default(),
            deleters: None,
        }
    }

    /// Puts the op runs deferred by [`OpLog::defer_ops`] in place: `side`
    /// (made by [`OpLog::history_side`]) holds them and their marks; their
    /// inserts point into this log's content (the texts the head loaded),
    /// so the log ends as if the history had loaded first: the same
    /// offsets, and the first local run joins the history's last when it
    /// continues it.
    pub fn attach_history(&mut self, side: OpLog) {
        debug_assert!(self.marks.is_empty() && self.keys.is_empty() && side.content.is_empty());
        debug_assert_eq!(side.ops.last().map_or(0, OpRun::end), self.ops_from);
        let local = std::mem::replace(&mut self.ops, side.ops);
        self.ops_from = 0;
        let mut local = local.into_iter();
        if let Some(first) = local.next() {
            self.push_op(first);
        }
        self.ops.extend(local);
        self.marks = side.marks;
        self.cancels = side.cancels;
        // Run indexes moved: the history's runs come first now.
        self.deleters = None;
        self.keys = side.keys;
        self.map_sets = side.map_sets;
        self.map_names = side.map_names;
        self.objects = side.objects;
    }

    /// Makes room for `ops` more op runs and `bytes` more text.
    pub fn reserve(&mut self, ops: usize, bytes: usize) {
        self.ops.reserve(ops);
        self.content.reserve(bytes);
    }

    /// Records the mark started by op `start` (in the log already):
    /// `key` = `value` with `expand`, ordered against other marks of the
    /// key by the op's Lamport timestamp and peer. The one constructor of
    /// marks: local marks, merged updates and loaded snapshots all call
    /// it. Returns the mark's index.
    pub fn start_mark(
        &mut self,
        key: &str,
        value: Value,
        expand: ExpandType,
        start: Seq,
    ) -> MarkIdx {
        let mark = MarkIdx::new(self.marks.len() as u32);
        let key = self.keys.intern(key);
        self.marks.push(Mark {
            key,
            value,
            expand,
            lamport: self.lamport_of(start),
            peer: self.seq_to_id(start).peer,
            start,
            end: NO_SEQ,
            cancelled: false,
        });
        mark
    }

    /// Records map op `seq` (reserved or in the log already, not yet
    /// pushed as a run): `key` of map `map` (interned with
    /// [`OpLog::intern_map`]) set to `value` (`None` deletes), stamped
    /// with the op's Lamport timestamp and peer, and pushes its run.
    /// Returns the op as recorded. The one constructor of map ops: local
    /// writes, merged updates and loaded snapshots all call it.
    pub fn push_map_set(
        &mut self,
        seq: Seq,
        map: MapIdx,
        key: &str,
        value: Option<Value>,
    ) -> &MapSet {
        let set = MapSetIdx::new(self.map_sets.len() as u32);
        self.map_sets.push_back(MapSet {
            map,
            key: key.into(),
            value,
            lamport: self.lamport_of(seq),
            peer: self.seq_to_id(seq).peer,
            seq,
        });
        self.push_op(OpRun {
            seq,
            len: 1,
            text: TextIdx::default(),
            kind: OpKind::MapSet { set },
        });
        &self.map_sets[set.as_usize()]
    }

    /// Makes insert `seq` (of one U+FFFC char: the caller checks) an
    /// embed or a block marker; the first object given stays (an object
    /// never changes).
    pub fn set_object(&mut self, seq: Seq, object: Object) {
        self.objects.insert_if_absent(seq, object);
    }

    /// Whether insert `seq` is a block marker.
    #[inline]
    pub fn is_block(&self, seq: Seq) -> bool {
        !self.objects.is_empty() && matches!(self.objects.get(&seq), Some(Object::Block(_)))
    }

    /// The embeds and block markers, by the seq of their insert.
    #[inline]
    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    /// The write of `key` in map `map` that wins (the greatest stamp)
    /// among the map ops whose seq `counts` takes, if any. O(map ops).
    pub fn winning_write(
        &self,
        map: MapIdx,
        key: &str,
        counts: impl Fn(Seq) -> bool,
    ) -> Option<&MapSet> {
        self.map_sets
            .iter()
            .filter(|m| m.map == map && &*m.key == key && counts(m.seq))
            .max_by_key(|m| m.stamp())
    }

    /// Every map op, by arrival.
    #[inline]
    pub fn map_sets(&self) -> &im::Vector<MapSet> {
        &self.map_sets
    }

    /// Map op `set`, if there is one.
    #[inline]
    pub fn map_set(&self, set: MapSetIdx) -> Option<&MapSet> {
        self.map_sets.get(set.as_usize())
    }

    /// The names of the maps map ops write.
    #[inline]
    pub fn map_names(&self) -> &MapNames {
        &self.map_names
    }

    /// The index of map `name`, added to the name table if missing.
    pub fn intern_map(&mut self, name: &str) -> MapIdx {
        self.map_names.intern(name)
    }

    /// Records op `end` as the end of mark `mark`. Returns the mark, or
    /// `None` (changing nothing) when there is no such mark or it has an
    /// end already.
    pub fn end_mark(&mut self, mark: MarkIdx, end: Seq) -> Option<&Mark> {
        let m = self
            .marks
            .get_mut(mark.as_usize())
            .filter(|m| m.end == NO_SEQ)?;
        m.end = end;
        Some(m)
    }

    /// Reserves `n` seqs for new local ops of `peer`, extending the open
    /// change or opening one on top of the current heads.
    ///
    /// # Errors
    ///
    /// [`Error::CounterOverflow`] or [`Error::HistoryFull`] when the ops would
    /// not fit the id spaces, [`Error::Detached`] for a checked-out
    /// version's history; nothing changes then.
    #[inline]
    pub fn reserve_local(&mut self, peer: PeerId, n: u32) -> Result<Seq> {
        self.check_writable()?;
        let seq = self.next_seq;
        let end = seq
            .checked_add(n)
            .filter(|&end| end < NO_SEQ)
            .ok_or(Error::HistoryFull)?;
        let counter = if self.open {
            None
        } else {
            Some(self.version.get(peer))
        };
        match counter {
            Some(counter) if !self.continues_last(peer, counter) => {
                if counter.checked_add(n).is_none() {
                    return Err(Error::CounterOverflow { peer });
                }
                let peer_idx = self.peers.intern(peer);
                let mut deps: SmallVec<[Seq; 2]> = self.heads.iter().collect();
                self.add_own_previous(peer, counter, &mut deps);
                self.push_change(peer_idx, counter, n, self.next_lamport, &deps);
            }
            _ => {
                let change = self.changes.last_mut().expect("there is a last change");
                if change.counter_end().checked_add(n).is_none() {
                    return Err(Error::CounterOverflow { peer });
                }
                change.len += n;
            }
        }
        self.open = true;
        self.next_seq = end;
        Ok(seq)
    }

    /// Checks that `ops` more local ops of `peer` and `bytes` more bytes
    /// of text would fit the id spaces, so that an edit made of several
    /// steps can refuse before its first step instead of failing midway.
    ///
    /// # Errors
    ///
    /// [`Error::HistoryFull`], [`Error::CounterOverflow`] or
    /// [`Error::Detached`], as [`OpLog::reserve_local`] would.
    pub fn check_room(&self, peer: PeerId, ops: u64, bytes: u64) -> Result<()> {
        self.check_writable()?;
        if u64::from(self.next_seq) + ops >= u64::from(NO_SEQ)
            || self.content.len() as u64 + bytes >= u64::from(u32::MAX)
        {
            return Err(Error::HistoryFull);
        }
        let counter = match self.changes.last() {
            Some(c) if self.open => c.counter_end(),
            _ => self.version.get(peer),
        };
        if u64::from(counter) + ops > u64::from(Counter::MAX) {
            return Err(Error::CounterOverflow { peer });
        }
        Ok(())
    }

    /// Whether new ops `(peer, counter..)` on top of the current heads just
    /// continue the last change (same peer, nothing else seen since): then
    /// they join it instead of starting a change.
    fn continues_last(&self, peer: PeerId, counter: Counter) -> bool {
        self.changes.last().is_some_and(|last| {
            self.peers.get(last.peer) == peer
                && last.counter_end() == counter
                && self.heads.len() == 1
                && self.heads.first() == Some(last.seq_end() - 1)
        })
    }

    /// Makes `deps` (of a change starting at `peer`'s op `counter`) the
    /// canonical dependency set: sorted, without duplicates, and holding
    /// the peer's previous op whenever `counter > 0`. Every path that adds a
    /// change (local ops, updates, snapshots, a change that arrives with
    /// its first ops already known) goes through here, so every replica
    /// stores the same deps and derives the same Lamport timestamps. For
    /// a history Weft wrote the previous op is already in the deps' causal
    /// past; naming it changes no timestamp.
    fn add_own_previous(&self, peer: PeerId, counter: Counter, deps: &mut SmallVec<[Seq; 2]>) {
        if counter > 0 {
            let prev = self.id_to_seq(OpId::new(peer, counter - 1));
            debug_assert!(prev.is_some(), "a change continues its peer's known ops");
            if let Some(prev) = prev {
                deps.push(prev);
            }
        }
        deps.sort_unstable();
        deps.dedup();
    }

    /// Appends a change of peer `peer` (ops `counter..counter + len`,
    /// first Lamport `lamport`, canonical `deps`) at the next seq.
    fn push_change(
        &mut self,
        peer: PeerIdx,
        counter: Counter,
        len: u32,
        lamport: Lamport,
        deps: &[Seq],
    ) {
        let idx = self.changes.len() as u32;
        if self.by_peer.len() <= peer.as_usize() {
            self.by_peer.resize_with(peer.as_usize() + 1, Vec::new);
        }
        self.by_peer[peer.as_usize()].push(idx);
        self.changes.push(Change {
            peer,
            counter,
            seq: self.next_seq,
            len,
            lamport,
            deps_start: self.dep_pool.len() as u32,
            deps_len: deps.len() as u32,
        });
        self.dep_pool.extend_from_slice(deps);
    }

    /// One past the last committed counter of `peer` (0 if unknown).
    pub fn known_end(&self, peer: PeerId) -> crate::id::Counter {
        self.version.get(peer)
    }

    /// The seqs a change depends on.
    pub fn deps(&self, change: &Change) -> &[Seq] {
        deps_in(&self.dep_pool, change)
    }

    /// Whether a local change is open (edited since the last commit).
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Closes the open local change, if any: it joins the committed version.
    pub fn commit(&mut self) {
        if !self.open {
            return;
        }
        self.open = false;
        let change = *self.changes.last().expect("an open change exists");
        self.record_committed(&change);
    }

    /// Updates the committed version, heads and Lamport clock for the last
    /// change, which grew or was added.
    fn record_committed(&mut self, change: &Change) {
        let peer = self.peers.get(change.peer);
        self.version.extend_to(peer, change.counter_end());
        self.next_lamport = self.next_lamport.max(change.lamport + change.len);
        // A change that grew on top of its own last op (a commit per
        // keystroke): that op was the only head, and the new last op
        // replaces it. Its deps left the heads when it was first recorded.
        if let Heads::One(h) = self.heads {
            if change.seq <= h && h < change.seq_end() {
                self.heads = Heads::One(change.seq_end() - 1);
                return;
            }
        }
        // The pool, not `self.deps()`: `self.heads` is borrowed mutably below.
        for &d in deps_in(&self.dep_pool, change) {
            self.heads.remove(d);
        }
        // A change that grew replaces its own previous last op.
        while let Some(h) = self.heads.first_in(change.seq..change.seq_end()) {
            self.heads.remove(h);
        }
        self.heads.insert(change.seq_end() - 1);
    }

    /// Appends a committed change received from another peer: ops
    /// `counter..counter + len` of `peer`, depending on `deps` (seqs).
    /// Returns the seq of its first op. The caller has checked that the
    /// counters continue the peer's known ops and that the seqs fit.
    pub fn push_remote_change(
        &mut self,
        peer: PeerId,
        counter: Counter,
        len: u32,
        mut deps: SmallVec<[Seq; 2]>,
    ) -> Seq {
        debug_assert!(!self.open);
        debug_assert_eq!(self.version.get(peer), counter);
        let seq = self.next_seq;
        self.add_own_previous(peer, counter, &mut deps);
        if self.continues_last(peer, counter) && deps.iter().copied().eq(self.heads.iter()) {
            let change = self.changes.last_mut().expect("there is a last change");
            change.len += len;
            let change = *change;
            self.record_committed(&change);
        } else {
            let lamport = deps
                .iter()
                .map(|&d| self.lamport_of(d) + 1)
                .max()
                .unwrap_or(0);
            let peer_idx = self.peers.intern(peer);
            self.push_change(peer_idx, counter, len, lamport, &deps);
            let change = *self.changes.last().expect("just pushed");
            self.record_committed(&change);
        }
        self.next_seq = seq + len;
        seq
    }

    /// The parts of changes that `version` lacks, as (change index, seq
    /// range), in seq order. O(k log n) for k such changes.
    pub fn changes_missing_from(&self, version: &VersionVector) -> Vec<(usize, Range<Seq>)> {
        let mut out = Vec::new();
        for (peer_idx, list) in self.by_peer.iter().enumerate() {
            let known = version.get(self.peers.get(PeerIdx::new(peer_idx as u32)));
            let first = list.partition_point(|&c| self.changes[c as usize].counter_end() <= known);
            for &c in &list[first..] {
                let change = &self.changes[c as usize];
                let skip = known.saturating_sub(change.counter);
                out.push((c as usize, change.seq + skip..change.seq_end()));
            }
        }
        out.sort_unstable_by_key(|p| p.1.start);
        out
    }

    /// Indexes into [`OpLog::changes`] of the changes of `peer`, by
    /// increasing counter.
    pub fn changes_of(&self, peer: PeerIdx) -> &[u32] {
        self.by_peer.get(peer.as_usize()).map_or(&[], Vec::as_slice)
    }

    /// Index of the change holding `seq`.
    pub fn change_index(&self, seq: Seq) -> usize {
        self.changes.partition_point(|c| c.seq_end() <= seq)
    }

    /// The id of the op with `seq`.
    pub fn seq_to_id(&self, seq: Seq) -> OpId {
        let change = &self.changes[self.change_index(seq)];
        OpId::new(
            self.peers.get(change.peer),
            change.counter + (seq - change.seq),
        )
    }

    /// The Lamport timestamp of the op with `seq`.
    pub fn lamport_of(&self, seq: Seq) -> Lamport {
        let change = &self.changes[self.change_index(seq)];
        change.lamport + (seq - change.seq)
    }

    /// The seq of op `id`, if this document knows it.
    pub fn id_to_seq(&self, id: OpId) -> Option<Seq> {
        let list = self.by_peer.get(self.peers.find(id.peer)?.as_usize())?;
        let i = list.partition_point(|&c| self.changes[c as usize].counter_end() <= id.counter);
        let change = &self.changes[*list.get(i)? as usize];
        (change.counter <= id.counter).then(|| change.seq + (id.counter - change.counter))
    }

    /// Index of the op run holding `seq`.
    pub fn op_index(&self, seq: Seq) -> usize {
        debug_assert!(seq >= self.ops_from, "op run {seq} is not loaded");
        self.ops.partition_point(|r| r.end() <= seq)
    }

    /// The mark whose start anchor is op `seq`, and that op's text;
    /// `None` when op `seq` is not a mark's start or not in the log.
    pub fn mark_started_by(&self, seq: Seq) -> Option<(MarkIdx, TextIdx)> {
        let run = self.ops.get(self.op_index_recent(seq))?;
        match run.kind {
            OpKind::MarkStart { mark, .. } if run.seq <= seq && seq < run.end() => {
                Some((mark, run.text))
            }
            _ => None,
        }
    }

    /// [`OpLog::op_index`], trying the last few runs before a search:
    /// most references are to what was made just before.
    #[inline]
    pub fn op_index_recent(&self, seq: Seq) -> usize {
        let n = self.ops.len();
        for back in 1..=4 {
            let Some(i) = n.checked_sub(back) else { break };
            match self.ops.get(i) {
                Some(r) if r.seq <= seq => {
                    return if seq < r.end() { i } else { i + 1 };
                }
                _ => {}
            }
        }
        self.op_index(seq)
    }

    /// The op runs holding seqs `range`, in order, each with the part of
    /// `range` it holds. O(log runs + runs returned).
    pub fn runs_in(&self, range: Range<Seq>) -> impl Iterator<Item = (&OpRun, Range<Seq>)> + '_ {
        let first = self.op_index(range.start);
        self.ops
            .iter_from(first)
            .take_while(move |r| r.seq < range.end)
            .map(move |r| (r, range.start.max(r.seq)..range.end.min(r.end())))
    }

    /// Appends a run as it is, without merging it into the last one (the
    /// snapshot loader keeps runs split as its segments need them).
    pub fn push_op_unmerged(&mut self, run: OpRun) {
        debug_assert_eq!(
            run.seq,
            self.ops.last().map_or(self.ops_from, OpRun::end),
            "op runs are contiguous"
        );
        self.ops.push(run);
    }

    /// Appends insert run `seq..seq + len` of `text` between `origins`,
    /// cut into runs where `piece(at, end)` says: for the chars from
    /// `at`, one past the last char of the piece (at most `end`) and
    /// where its text is (byte start, bytes; [`NO_CONTENT`] for none).
    /// Each piece's origins are those of its first char in the run. The
    /// snapshot loader cuts runs where their chars' visibility changes.
    ///
    /// # Errors
    ///
    /// What `piece` returns, or [`Error::Inconsistent`] if a piece is empty
    /// or ends past the run.
    pub fn push_insert_pieces(
        &mut self,
        (seq, len, text): (Seq, u32, TextIdx),
        (left, right): (Seq, Seq),
        mut piece: impl FnMut(Seq, Seq) -> Result<(Seq, u32, u32)>,
    ) -> Result<()> {
        let whole = OpRun {
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
            let (upto, byte_start, bytes) = piece(at, end)?;
            if upto <= at || upto > end {
                return Err(Error::Inconsistent {
                    what: "insert piece",
                });
            }
            let (origin_left, origin_right) = origins_at(&whole, at - seq);
            self.push_op_unmerged(OpRun {
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

    /// Appends ops to the log, merging with the last run when possible.
    #[inline]
    pub fn push_op(&mut self, run: OpRun) {
        debug_assert_eq!(
            run.seq,
            self.ops.last().map_or(self.ops_from, OpRun::end),
            "op runs are contiguous"
        );
        if let Some(last) = self.ops.last_mut() {
            if last.try_append(&run) {
                return;
            }
        }
        self.ops.push(run);
    }

    /// Appends a local insert run (its text is at `byte_start..+bytes` in
    /// `content`): the common case of [`OpLog::push_op`], typing, costs
    /// a few comparisons.
    #[inline]
    #[expect(clippy::too_many_arguments, reason = "the fields of one run")]
    pub fn push_insert(
        &mut self,
        text: TextIdx,
        seq: Seq,
        len: u32,
        origin_left: Seq,
        origin_right: Seq,
        byte_start: u32,
        bytes: u32,
    ) {
        if let Some(last) = self.ops.last_mut() {
            if let OpKind::Insert {
                origin_right: right,
                byte_start: start,
                bytes: n,
                ..
            } = &mut last.kind
            {
                if last.text == text
                    && last.seq + last.len == seq
                    && origin_left == seq.wrapping_sub(1)
                    && *right == origin_right
                    && *start != NO_CONTENT
                    && *start + *n == byte_start
                {
                    last.len += len;
                    *n += bytes;
                    return;
                }
            }
        }
        self.push_op(OpRun {
            seq,
            len,
            text,
            kind: OpKind::Insert {
                origin_left,
                origin_right,
                byte_start,
                bytes,
            },
        });
    }

    /// The version including the open local change.
    pub fn version(&self) -> VersionVector {
        let mut v = self.version.clone();
        if self.open {
            let c = self.changes.last().expect("an open change exists");
            v.extend_to(self.peers.get(c.peer), c.counter_end());
        }
        v
    }

    /// The committed version (excludes the open local change).
    pub fn committed_version(&self) -> &VersionVector {
        &self.version
    }

    /// The heads including the open local change.
    pub fn frontiers(&self) -> Frontiers {
        if self.open {
            let c = self.changes.last().expect("an open change exists");
            return std::iter::once(OpId::new(self.peers.get(c.peer), c.counter_end() - 1))
                .collect();
        }
        self.heads.iter().map(|s| self.seq_to_id(s)).collect()
    }

    /// The history as canonical runs, sorted by peer and counter: each run
    /// is a peer's consecutive ops where every op after the first depends
    /// only on the previous one, with the first op's Lamport timestamp and
    /// deps (sorted ids). Two replicas that hold the same history give the
    /// same runs, however their changes were split on arrival. O(changes).
    pub fn canonical_runs(&self) -> Vec<(IdSpan, Lamport, Vec<OpId>)> {
        let mut out: Vec<(IdSpan, Lamport, Vec<OpId>)> = Vec::new();
        let mut order: Vec<PeerIdx> = (0..self.by_peer.len() as u32).map(PeerIdx::new).collect();
        order.sort_unstable_by_key(|&p| self.peers.get(p));
        for p in order {
            let peer = self.peers.get(p);
            let first = out.len();
            for &c in &self.by_peer[p.as_usize()] {
                let c = &self.changes[c as usize];
                let mut deps: Vec<OpId> = self.deps(c).iter().map(|&d| self.seq_to_id(d)).collect();
                deps.sort_unstable();
                if let Some(last) = out[first..].last_mut() {
                    if last.0.counters.end == c.counter
                        && last.1 + last.0.len() == c.lamport
                        && deps == [OpId::new(peer, c.counter - 1)]
                    {
                        last.0.counters.end = c.counter_end();
                        continue;
                    }
                }
                out.push((
                    IdSpan::new(peer, c.counter..c.counter_end()),
                    c.lamport,
                    deps,
                ));
            }
        }
        out
    }

    /// Checks the log's structural invariants; panics on a broken one.
    pub fn assert_invariants(&self) {
        let mut seq = 0;
        for c in &self.changes {
            assert_eq!(c.seq, seq, "changes are contiguous");
            assert!(c.len > 0, "changes are not empty");
            let deps = self.deps(c);
            assert!(deps.iter().all(|&d| d < c.seq), "deps precede the change");
            assert!(deps.windows(2).all(|w| w[0] < w[1]), "deps are sorted");
            if c.counter > 0 {
                let prev = self.id_to_seq(OpId::new(self.peers.get(c.peer), c.counter - 1));
                assert!(
                    prev.is_some_and(|p| deps.contains(&p)),
                    "a change depends on its peer's previous op"
                );
            }
            let lamport = deps.iter().map(|&d| self.lamport_of(d) + 1).max();
            assert_eq!(
                c.lamport,
                lamport.unwrap_or(0),
                "a Lamport timestamp follows from the deps"
            );
            seq = c.seq_end();
        }
        assert_eq!(seq, self.next_seq);
        let mut seq = self.ops_from;
        for r in &self.ops {
            assert_eq!(r.seq, seq, "op runs are contiguous");
            assert!(r.len > 0);
            seq = r.end();
        }
        assert_eq!(seq, self.next_seq);
        for (peer_idx, list) in self.by_peer.iter().enumerate() {
            let mut counter = 0;
            for &c in list {
                let c = &self.changes[c as usize];
                assert_eq!(c.peer.as_usize(), peer_idx);
                assert_eq!(c.counter, counter, "a peer's counters are contiguous");
                counter = c.counter_end();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_changes_chain_and_commit() {
        let mut log = OpLog::default();
        assert_eq!(log.reserve_local(7, 3).unwrap(), 0);
        assert_eq!(log.reserve_local(7, 2).unwrap(), 3);
        assert_eq!(log.changes.len(), 1);
        assert_eq!(log.committed_version().get(7), 0);
        assert_eq!(log.version().get(7), 5);
        log.commit();
        assert_eq!(log.committed_version().get(7), 5);
        assert_eq!(log.reserve_local(7, 1).unwrap(), 5);
        log.commit();
        // Nothing happened in between: the new ops continue the change.
        assert_eq!(log.changes.len(), 1);
        assert_eq!(log.changes[0].len, 6);
        log.push_remote_change(8, 0, 1, smallvec::smallvec![5]);
        log.reserve_local(7, 1).unwrap();
        log.commit();
        assert_eq!(log.changes.len(), 3);
        // The heads, plus the peer's own previous op (named explicitly).
        assert_eq!(log.deps(&log.changes[2]), &[5, 6]);
        assert_eq!(log.changes[2].lamport, 7);
        assert_eq!(log.seq_to_id(5), OpId::new(7, 5));
        assert_eq!(log.id_to_seq(OpId::new(7, 4)), Some(4));
        assert_eq!(log.id_to_seq(OpId::new(7, 6)), Some(7));
        assert_eq!(log.id_to_seq(OpId::new(7, 7)), None);
        assert_eq!(log.frontiers().as_slice(), &[OpId::new(7, 6)]);
    }

    #[test]
    fn remote_changes_merge_heads() {
        let mut log = OpLog::default();
        log.reserve_local(1, 2).unwrap();
        log.commit();
        let s = log.push_remote_change(2, 0, 3, SmallVec::new());
        assert_eq!(s, 2);
        assert_eq!(log.frontiers().len(), 2);
        let s = log.push_remote_change(2, 3, 1, smallvec::smallvec![1, 4]);
        assert_eq!(log.lamport_of(s), 3);
        assert_eq!(log.frontiers().as_slice(), &[OpId::new(2, 3)]);
    }
}
