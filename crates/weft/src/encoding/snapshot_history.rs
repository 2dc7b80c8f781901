//! A snapshot's history: the change table and the op runs, written with
//! seqs (a snapshot numbers ops in the order it lists them, which is the
//! order a loading document gives them) and without text. The blocks of
//! format versions 1-3 are read here; version 4 writes its runs as
//! columns (`columns.rs`).
//!
//! Op runs are written in a canonical form: maximal runs of inserts whose
//! chars chain, and of deletes whose targets go one way, merged op by op
//! whatever runs the log happens to hold. A document that loads a snapshot
//! splits runs differently (by visibility), so the
//! canonical form is what makes export -> import -> export byte-identical.
//!
//! ```text
//! changes "c": varint n, then per change: varint peer index (meta's
//!     table), varint counter, varint length, varint number of deps, then
//!     each dep as varint (first seq of the change - dep seq)
//! block "h" + u32 BE s (versions 1-3), the op runs from seq s on, about
//!     4 KiB of them (a block ends after the run that reaches that size;
//!     the next block's key is the seq after its last run):
//!     varint number of runs, then per run:
//!     u8 kind: bits 0-2 0 insert, 1 delete forward, 2 delete backward
//!                       (op i deletes target - i), 3 mark start,
//!                       4 mark end
//!              bit 3    a text index follows (else as before, from 0)
//!              bits 4-7 the length if 1..=15, else 0 and a varint
//!     [varint length] [varint text index]
//!     insert, mark: varint left origin as seq - origin (0 none), varint
//!         right origin as zigzag(origin - base) + 1 (0 none), base =
//!         the left origin, or the run's seq without one
//!     delete: varint zigzag(first target - R), R = the last target of
//!         the block's previous delete run (the run's own seq at first)
//!     mark start: u8 expand rule, varint length + UTF-8 key, the value
//!     mark end: varint seq - the seq of its mark's start
//!     map op (kind 5, length 1, never a text index; format version 3):
//!         varint map index (in "n"), varint length + UTF-8 key, u8 0
//!         (delete) or 1 and the value
//! ```

use crate::error::Result;
use crate::id::{MapIdx, PeerId, Seq, TextIdx, NO_SEQ};
use crate::oplog::{OpKind, OpLog, OpRun, NO_CONTENT};
use crate::style::ExpandType;
use crate::value::Value;

use super::value_bytes::{read_map_value, read_string, read_value, write_value};
use crate::bytes::{bounded_capacity, peer_at, unzigzag, write_bytes, write_varint, Reader};

const INSERT: u8 = 0;
const DELETE: u8 = 1;
const DELETE_BACKWARDS: u8 = 2;
const MARK_START: u8 = 3;
const MARK_END: u8 = 4;
const MAP_SET: u8 = 5;
const FLAG_TEXT: u8 = 1 << 3;

/// Writes the change table.
pub(crate) fn encode_changes(log: &OpLog, peer_index: impl Fn(PeerId) -> u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(log.changes().len() * 6 + 4);
    write_varint(&mut out, log.changes().len() as u64);
    for c in log.changes() {
        write_varint(&mut out, peer_index(log.peers().get(c.peer)));
        write_varint(&mut out, u64::from(c.counter));
        write_varint(&mut out, u64::from(c.len));
        let deps = log.deps(c);
        write_varint(&mut out, deps.len() as u64);
        for &d in deps {
            write_varint(&mut out, u64::from(c.seq - d));
        }
    }
    out
}

/// Reads the change table into `log` (empty), checking counters and deps.
pub(crate) fn decode_changes(bytes: &[u8], peers: &[PeerId], log: &mut OpLog) -> Result<()> {
    let mut r = Reader::new(bytes, 0);
    let n = r.count("change count")?;
    for _ in 0..n {
        let p = r.varint()?;
        let peer = peer_at(&r, peers, p)?;
        let counter = r.u32("change counter")?;
        let len = r.u32("change length")?;
        let seq = log.next_seq();
        let fits =
            seq.checked_add(len).is_some_and(|e| e < NO_SEQ) && counter.checked_add(len).is_some();
        if len == 0 || !fits || log.known_end(peer) != counter {
            return Err(r.malformed("change"));
        }
        let k = r.count("dependency count")?;
        let mut deps = smallvec::SmallVec::with_capacity(bounded_capacity(k));
        for _ in 0..k {
            let back = r.u32("dependency")?;
            if back == 0 || back > seq {
                return Err(r.malformed("dependency"));
            }
            deps.push(seq - back);
        }
        log.push_remote_change(peer, counter, len, deps);
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing change bytes"));
    }
    Ok(())
}

/// Op runs of the log in canonical form, cut at block boundaries.
pub(crate) struct CanonicalRuns<'a> {
    log: &'a OpLog,
    /// Index of the next log run to take in.
    next: usize,
    /// Ops of the current delete log run already taken in.
    taken: u32,
    pending: Option<OpRun>,
}

impl<'a> CanonicalRuns<'a> {
    /// The runs from seq `from` on (a run holding it starts there).
    pub fn from_seq(log: &'a OpLog, from: Seq) -> Self {
        let mut runs = CanonicalRuns::new(log);
        if from > 0 {
            runs.next = log.op_index(from);
            runs.taken = log
                .ops()
                .get(runs.next)
                .map_or(0, |r| from.saturating_sub(r.seq));
        }
        runs
    }

    pub fn new(log: &'a OpLog) -> Self {
        CanonicalRuns {
            log,
            next: 0,
            taken: 0,
            pending: None,
        }
    }

    /// Starts a pending run with the untaken part of `run` (a delete run
    /// whose first ops joined the previous one starts later).
    fn take_first(&mut self, run: OpRun) -> OpRun {
        let mut first = run;
        if let (OpKind::Insert { origin_right, .. }, true) = (run.kind, self.taken > 0) {
            // Only where `from_seq` starts inside an insert run (a block
            // holds no text: the content fields are not written).
            first = OpRun {
                seq: run.seq + self.taken,
                len: run.len - self.taken,
                text: run.text,
                kind: OpKind::Insert {
                    origin_left: run.seq + self.taken - 1,
                    origin_right,
                    byte_start: crate::oplog::NO_CONTENT,
                    bytes: 0,
                },
            };
        }
        if let OpKind::Delete { reversed, .. } = run.kind {
            let rest = run.len - self.taken;
            let target = run.delete_targets(self.taken, 1).map_or(0, |t| t.start);
            first = OpRun {
                seq: run.seq + self.taken,
                len: rest,
                text: run.text,
                kind: OpKind::Delete {
                    target,
                    reversed: reversed && rest > 1,
                },
            };
        }
        self.next += 1;
        self.taken = 0;
        first
    }
}

impl Iterator for CanonicalRuns<'_> {
    type Item = OpRun;

    fn next(&mut self) -> Option<OpRun> {
        loop {
            let Some(run) = self.log.ops().get(self.next).copied() else {
                return self.pending.take();
            };
            let Some(mut p) = self.pending.take() else {
                self.pending = Some(self.take_first(run));
                continue;
            };
            let joined = run.text == p.text
                && match (p.kind, run.kind) {
                    (
                        OpKind::Insert { origin_right, .. },
                        OpKind::Insert {
                            origin_left: l,
                            origin_right: r,
                            ..
                        },
                    ) => {
                        let chained = l == p.seq + p.len - 1 && r == origin_right;
                        if chained {
                            p.len += run.len;
                            self.next += 1;
                        }
                        chained
                    }
                    (
                        OpKind::Delete {
                            target: pt,
                            reversed: pr,
                        },
                        OpKind::Delete { reversed: rr, .. },
                    ) => {
                        // As `OpRun::try_append` op by op, a whole run at a
                        // time: a run joins in part when only its first op
                        // continues the pending run.
                        let rest = run.len - self.taken;
                        let t0 = run.delete_targets(self.taken, 1).map_or(0, |t| t.start);
                        let last = if pr {
                            pt - (p.len - 1)
                        } else {
                            pt + (p.len - 1)
                        };
                        let forward = (!pr || p.len == 1) && last.checked_add(1) == Some(t0);
                        let backward = (pr || p.len == 1) && last.checked_sub(1) == Some(t0);
                        let run_back = rr && rest > 1;
                        let n = if (forward && !run_back) || (backward && (run_back || rest == 1)) {
                            rest
                        } else if forward || backward {
                            1
                        } else {
                            0
                        };
                        if n > 0 {
                            p.kind = OpKind::Delete {
                                target: pt,
                                reversed: backward,
                            };
                            p.len += n;
                            self.taken += n;
                            if self.taken == run.len {
                                self.next += 1;
                                self.taken = 0;
                            }
                        }
                        n > 0
                    }
                    _ => false,
                };
            if joined {
                self.pending = Some(p);
            } else {
                self.pending = Some(self.take_first(run));
                return Some(p);
            }
        }
    }
}

/// Reads what follows a mark start's origins in a block (its rule, key
/// and value) and adds the mark to `log`'s table: the op `seq` in the
/// log's form.
pub(super) fn read_mark_start(
    r: &mut Reader<'_>,
    log: &mut OpLog,
    seq: Seq,
    (origin_left, origin_right): (Seq, Seq),
) -> Result<OpKind> {
    let expand = ExpandType::from_byte(r.u8()?).ok_or_else(|| r.malformed("expand rule"))?;
    let key = read_string(r)?;
    let value = read_value(r, 0)?;
    Ok(OpKind::MarkStart {
        origin_left,
        origin_right,
        mark: log.start_mark(&key, value, expand, seq),
    })
}

/// Reads what follows a mark end's origins in a block (how far back its
/// start is): the op `seq` in the log's form, naming the mark that start
/// op of `log` began.
pub(super) fn read_mark_end(
    r: &mut Reader<'_>,
    log: &OpLog,
    seq: Seq,
    (origin_left, origin_right): (Seq, Seq),
) -> Result<OpKind> {
    let back = r.u32("mark start")?;
    let (mark, _) = seq
        .checked_sub(back)
        .filter(|_| back > 0)
        .and_then(|start| log.mark_started_by(start))
        .ok_or_else(|| r.malformed("mark start"))?;
    Ok(OpKind::MarkEnd {
        origin_left,
        origin_right,
        mark,
    })
}

/// Reads map op `seq` of a block (`maps`: how many map names the
/// snapshot has) and records it in `log`, which numbers the maps as the
/// snapshot does.
pub(super) fn read_map_set(r: &mut Reader<'_>, log: &mut OpLog, seq: Seq, maps: u32) -> Result<()> {
    let map = r.u32("map index")?;
    if map >= maps {
        return Err(r.malformed("map index"));
    }
    let key = read_string(r)?;
    let value = read_map_value(r)?;
    log.push_map_set(seq, MapIdx::new(map), &key, value);
    Ok(())
}

/// Reads the runs of one block starting at seq `seq`; `limit` is the
/// number of ops of the whole history, `texts` the number of texts and
/// `maps` of map names. Each run goes to `f` in the log's form, with
/// `log` (the history read so far): its text is the snapshot's index,
/// an insert's text is not placed yet ([`NO_CONTENT`]), a mark op names
/// the mark in `log`'s table (a start adds it). Map ops are recorded in
/// `log` here. Returns the seq after the block.
pub(crate) fn decode_block(
    bytes: &[u8],
    mut seq: Seq,
    limit: Seq,
    (texts, maps): (u32, u32),
    log: &mut OpLog,
    mut f: impl FnMut(&mut OpLog, OpRun) -> Result<()>,
) -> Result<Seq> {
    let mut r = Reader::new(bytes, 0);
    let n = r.count("run count")?;
    let mut text = 0u32;
    let mut last_target: Option<Seq> = None;
    for _ in 0..n {
        let byte = r.u8()?;
        let kind = byte & 0b111;
        let len = match u32::from(byte >> 4) {
            0 => r.u32("run length")?,
            l => l,
        };
        if kind == MAP_SET {
            if len != 1 || byte & FLAG_TEXT != 0 || seq >= limit {
                return Err(r.malformed("map op"));
            }
            read_map_set(&mut r, log, seq, maps)?;
            seq += 1;
            continue;
        }
        if byte & FLAG_TEXT != 0 {
            text = r.u32("text index")?;
        }
        let end = seq.checked_add(len).filter(|&e| e <= limit && len > 0);
        if text >= texts || end.is_none() {
            return Err(r.malformed("op run"));
        }
        // An origin: an earlier op, or none.
        let origins = |r: &mut Reader<'_>| -> Result<(Seq, Seq)> {
            let l = r.u32("left origin")?;
            let left = if l == 0 {
                NO_SEQ
            } else {
                seq.checked_sub(l)
                    .ok_or_else(|| r.malformed("left origin"))?
            };
            let v = r.varint()?;
            let right = if v == 0 {
                NO_SEQ
            } else {
                let base = if left == NO_SEQ { seq } else { left };
                seq_at(base, unzigzag(v - 1))
                    .filter(|&s| s < seq)
                    .ok_or_else(|| r.malformed("right origin"))?
            };
            Ok((left, right))
        };
        let kind = match kind {
            INSERT => {
                let (origin_left, origin_right) = origins(&mut r)?;
                unplaced(origin_left, origin_right)
            }
            DELETE | DELETE_BACKWARDS => {
                let base = last_target.unwrap_or(seq);
                let reversed = kind == DELETE_BACKWARDS;
                // Both ends are earlier ops: the run's targets lie between.
                let span = i64::from(len - 1);
                let target = seq_at(base, unzigzag(r.varint()?)).filter(|&t| t < seq);
                let last = target
                    .and_then(|t| seq_at(t, if reversed { -span } else { span }))
                    .filter(|&l| l < seq);
                let (Some(target), Some(last)) = (target, last) else {
                    return Err(r.malformed("delete target"));
                };
                last_target = Some(last);
                OpKind::Delete { target, reversed }
            }
            MARK_START | MARK_END => {
                if len != 1 {
                    return Err(r.malformed("mark op length"));
                }
                let origins = origins(&mut r)?;
                if kind == MARK_START {
                    read_mark_start(&mut r, log, seq, origins)?
                } else {
                    read_mark_end(&mut r, log, seq, origins)?
                }
            }
            _ => return Err(r.malformed("op kind")),
        };
        let text = TextIdx::new(text);
        f(
            log,
            OpRun {
                seq,
                len,
                text,
                kind,
            },
        )?;
        seq += len;
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing block bytes"));
    }
    Ok(seq)
}

/// An insert read from a block, its text not yet placed.
pub(super) fn unplaced(origin_left: Seq, origin_right: Seq) -> OpKind {
    OpKind::Insert {
        origin_left,
        origin_right,
        byte_start: NO_CONTENT,
        bytes: 0,
    }
}

/// `base + delta` as a seq: `None` where a hostile delta leaves the
/// seqs (below zero, past `u32::MAX`) or the `i64` sum would overflow.
pub(super) fn seq_at(base: Seq, delta: i64) -> Option<Seq> {
    i64::from(base)
        .checked_add(delta)
        .and_then(|s| Seq::try_from(s).ok())
}

/// A mark whose start op is in a shallow snapshot's trimmed root (see
/// [`write_root_marks`]): what the stand-in runs of its anchors need.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RootMark {
    /// The text (snapshot index) of its anchors.
    pub text: u32,
    pub start: Seq,
    pub start_origins: (Seq, Seq),
    pub expand: ExpandType,
    pub key: String,
    pub value: Value,
    /// Its end op and that op's origins, when the end is in the root too.
    pub end: Option<(Seq, (Seq, Seq))>,
}

/// Writes the marks started in the root (the ops below `trimmed`):
/// ```text
/// varint n, then per mark (by start seq):
///     varint text, varint start seq, origins, u8 expand rule,
///     varint length + UTF-8 key, the value,
///     varint end seq - start seq (0: no end in the root), [origins]
/// origins: varint left + 1, varint right + 1 (0: none)
/// ```
pub(crate) fn write_root_marks(log: &OpLog, trimmed: Seq) -> Vec<u8> {
    let origins = |seq: Seq| -> Option<(TextIdx, (Seq, Seq))> {
        let run = log.ops().get(log.op_index(seq))?;
        let a = run.kind.anchor()?;
        Some((run.text, (a.origin_left, a.origin_right)))
    };
    let write_origins = |out: &mut Vec<u8>, (l, r): (Seq, Seq)| {
        for o in [l, r] {
            write_varint(out, if o == NO_SEQ { 0 } else { u64::from(o) + 1 });
        }
    };
    let mut marks: Vec<_> = log.marks().iter().filter(|m| m.start < trimmed).collect();
    marks.sort_by_key(|m| m.start);
    let mut out = Vec::new();
    write_varint(&mut out, marks.len() as u64);
    for m in marks {
        let (text, start_origins) = origins(m.start).unwrap_or((TextIdx::new(0), (NO_SEQ, NO_SEQ)));
        write_varint(&mut out, u64::from(u32::from(text)));
        write_varint(&mut out, u64::from(m.start));
        write_origins(&mut out, start_origins);
        out.push(m.expand.to_byte());
        write_bytes(&mut out, log.keys().name(m.key).as_bytes());
        write_value(&mut out, &m.value);
        match origins(m.end).filter(|_| m.end < trimmed) {
            Some((_, o)) => {
                write_varint(&mut out, u64::from(m.end - m.start));
                write_origins(&mut out, o);
            }
            None => write_varint(&mut out, 0),
        }
    }
    out
}

/// Reads what [`write_root_marks`] wrote, for a root of `trimmed` ops:
/// starts increasing and below it, ends after their start and below it.
pub(crate) fn read_root_marks(bytes: &[u8], trimmed: Seq) -> Result<Vec<RootMark>> {
    let mut r = Reader::new(bytes, 0);
    let origin = |r: &mut Reader<'_>| -> Result<Seq> {
        match r.varint()? {
            0 => Ok(NO_SEQ),
            v => u32::try_from(v - 1)
                .ok()
                .filter(|&s| s < trimmed)
                .ok_or_else(|| r.malformed("root mark origin")),
        }
    };
    let n = r.count("root mark count")?;
    let mut out: Vec<RootMark> = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        let text = r.u32("text index")?;
        let start = r.u32("root mark start")?;
        if start >= trimmed || out.last().is_some_and(|m| m.start >= start) {
            return Err(r.malformed("root mark start"));
        }
        let start_origins = (origin(&mut r)?, origin(&mut r)?);
        let expand = ExpandType::from_byte(r.u8()?).ok_or_else(|| r.malformed("expand rule"))?;
        let key = read_string(&mut r)?;
        let value = read_value(&mut r, 0)?;
        let end = match r.u32("root mark end")? {
            0 => None,
            d => {
                let end = start
                    .checked_add(d)
                    .filter(|&e| e < trimmed)
                    .ok_or_else(|| r.malformed("root mark end"))?;
                Some((end, (origin(&mut r)?, origin(&mut r)?)))
            }
        };
        out.push(RootMark {
            text,
            start,
            start_origins,
            expand,
            key,
            value,
            end,
        });
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing root mark bytes"));
    }
    Ok(out)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests unwrap what must succeed")]
mod tests {
    use super::*;
    use crate::bytes::zigzag;

    /// One run of `len` ops of `kind` in text 0, then `rest`.
    fn block(kind: u8, len: u8, rest: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(&mut out, 1);
        out.push(kind | (len << 4));
        for &v in rest {
            write_varint(&mut out, v);
        }
        out
    }

    /// Decodes `bytes` as the block at seq 5 of a 10-op history.
    fn decode(bytes: &[u8]) -> Result<Vec<OpKind>> {
        let mut read = Vec::new();
        let mut log = OpLog::default();
        decode_block(bytes, 5, 10, (1, 0), &mut log, |_, run| {
            read.push(run.kind);
            Ok(())
        })?;
        Ok(read)
    }

    /// Found by a mutation fuzzer (issue 25): a decoded delta added to a
    /// seq unchecked overflowed `i64` (a panic with overflow checks on, a
    /// wrapped and maybe accepted seq without).
    #[test]
    fn hostile_origin_and_target_deltas_are_errors_not_overflows() {
        let huge = [u64::MAX, u64::MAX - 1, u64::MAX - 2, 1 << 63, (1 << 33) + 1];
        for v in huge {
            // A right origin, with and without a left one.
            for left in [0, 2] {
                assert!(decode(&block(INSERT, 1, &[left, v])).is_err(), "{v}");
                assert!(decode(&block(MARK_END, 1, &[left, v, 1])).is_err(), "{v}");
            }
            // A delete target, and a run that walks past either end.
            for kind in [DELETE, DELETE_BACKWARDS] {
                for len in [1, 2, 15] {
                    assert!(decode(&block(kind, len, &[v])).is_err(), "{v}");
                }
            }
        }
        // Runs that walk off the seqs from a valid first target.
        assert!(decode(&block(DELETE_BACKWARDS, 3, &[zigzag(-4)])).is_err());
        assert!(decode(&block(DELETE, 3, &[zigzag(-2)])).is_err());
        // What is in range still reads.
        assert_eq!(
            decode(&block(DELETE_BACKWARDS, 2, &[zigzag(-1)])).unwrap(),
            [OpKind::Delete {
                target: 4,
                reversed: true
            }]
        );
        assert_eq!(
            decode(&block(INSERT, 1, &[1, zigzag(-3) + 1])).unwrap(),
            [unplaced(4, 1)]
        );
    }
}
