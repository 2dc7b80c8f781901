//! Which ops a version lacks, as the pieces an update carries: the part
//! of each change it lacks, each op run clipped to it, and deletes split
//! so that they never cross a change. The bytes encoder and the in-memory
//! merge of a snapshot both walk this.
//!
//! Inserts keep their text even when the same update deletes it: a
//! replica needs it to show, fork or diff the versions in between.

use std::ops::Range;

use smallvec::SmallVec;

use crate::id::{IdSpan, Seq};
use crate::version::VersionVector;

use super::{origins_at, OpKind, OpLog, OpRun, NO_CONTENT};

impl OpLog {
    /// The part of each change that `from` lacks and `upto` (if given, a
    /// causally closed version) includes, as (change index, seqs), in seq
    /// order. O(k log n) for k pieces.
    pub fn missing_pieces(
        &self,
        from: &VersionVector,
        upto: Option<&VersionVector>,
    ) -> Vec<(usize, Range<Seq>)> {
        let mut pieces = self.changes_missing_from(from);
        if let Some(upto) = upto {
            pieces.retain_mut(|(ci, range)| {
                let change = &self.changes()[*ci];
                let end = upto.get(self.peers().get(change.peer));
                let cut = change.seq + end.saturating_sub(change.counter).min(change.len);
                range.end = range.end.min(cut);
                range.start < range.end
            });
        }
        pieces
    }

    /// The ops of `spans` this log holds (others are left out), as
    /// pieces like [`OpLog::missing_pieces`]'s: per change, the seqs of
    /// its ops in any span, in seq order, overlaps merged.
    pub fn pieces_in_spans(&self, spans: &[IdSpan]) -> Vec<(usize, Range<Seq>)> {
        let mut out: Vec<(usize, Range<Seq>)> = Vec::new();
        // An empty or reversed span names no op.
        for span in spans.iter().filter(|s| s.counters.start < s.counters.end) {
            let Some(list) = self.peers().find(span.peer).map(|p| self.changes_of(p)) else {
                continue;
            };
            let first = list.partition_point(|&c| {
                self.changes()[c as usize].counter_end() <= span.counters.start
            });
            for &c in &list[first..] {
                let change = &self.changes()[c as usize];
                if change.counter >= span.counters.end {
                    break;
                }
                let start = span.counters.start.max(change.counter) - change.counter;
                let end = span.counters.end.min(change.counter_end()) - change.counter;
                out.push((c as usize, change.seq + start..change.seq + end));
            }
        }
        out.sort_unstable_by_key(|p| (p.1.start, p.1.end));
        let mut merged: Vec<(usize, Range<Seq>)> = Vec::with_capacity(out.len());
        for (c, r) in out {
            match merged.last_mut() {
                Some((lc, lr)) if *lc == c && r.start <= lr.end => lr.end = lr.end.max(r.end),
                _ => merged.push((c, r)),
            }
        }
        merged
    }

    /// Calls `f` with every run of `piece` (seqs, one of
    /// [`OpLog::missing_pieces`]) clipped to it, in order.
    pub fn for_each_clipped_run(&self, piece: &Range<Seq>, mut f: impl FnMut(&OpRun)) {
        let mut buf: SmallVec<[OpRun; 4]> = SmallVec::new();
        for (run, seqs) in self.runs_in(piece.clone()) {
            buf.clear();
            clip_run(self, run, seqs, &mut buf);
            buf.iter().for_each(&mut f);
        }
    }
}

/// Pushes the part `range` of `run` to `out`, with delete and cancel
/// pieces split so that their targets never cross a change (they are
/// then one peer's consecutive counters).
fn clip_run(log: &OpLog, run: &OpRun, range: Range<Seq>, out: &mut SmallVec<[OpRun; 4]>) {
    match run.kind {
        OpKind::MarkStart { .. } | OpKind::MarkEnd { .. } | OpKind::MapSet { .. } => out.push(*run),
        OpKind::Insert { byte_start, .. } => {
            let offset = range.start - run.seq;
            let (origin_left, origin_right) = origins_at(run, offset);
            let (start, bytes) = if byte_start == NO_CONTENT {
                (NO_CONTENT, 0)
            } else {
                let text = run.content(log.content()).unwrap_or("").as_bytes();
                let (a, b) = if text.len() == run.len as usize {
                    (offset, range.end - run.seq) // ASCII
                } else {
                    let a = crate::unit::prefix_units(text, offset).0;
                    let rest = text.get(a as usize..).unwrap_or(&[]);
                    (
                        a,
                        a + crate::unit::prefix_units(rest, range.end - range.start).0,
                    )
                };
                (byte_start + a, b - a)
            };
            out.push(OpRun {
                seq: range.start,
                len: range.end - range.start,
                text: run.text,
                kind: OpKind::Insert {
                    origin_left,
                    origin_right,
                    byte_start: start,
                    bytes,
                },
            });
        }
        OpKind::Delete { reversed, .. } => {
            let mut at = range.start;
            while at < range.end {
                let offset = at - run.seq;
                // The targets of ops at..: stop where they leave a change.
                let first = run.delete_targets(offset, 1).map_or(0, |t| t.start);
                let room = log
                    .changes()
                    .get(log.change_index(first))
                    .map_or(1, |change| {
                        if reversed {
                            first - change.seq + 1
                        } else {
                            change.seq_end() - first
                        }
                    });
                let n = room.min(range.end - at);
                out.push(OpRun {
                    seq: at,
                    len: n,
                    text: run.text,
                    kind: OpKind::Delete {
                        target: first,
                        reversed,
                    },
                });
                at += n;
            }
        }
        OpKind::Cancel { .. } => {
            let mut at = range.start;
            while at < range.end {
                let first = run.cancel_targets(at - run.seq, 1).map_or(0, |t| t.start);
                let room = log
                    .changes()
                    .get(log.change_index(first))
                    .map_or(1, |change| change.seq_end() - first);
                let n = room.min(range.end - at);
                out.push(OpRun {
                    seq: at,
                    len: n,
                    text: run.text,
                    kind: OpKind::Cancel { target: first },
                });
                at += n;
            }
        }
    }
}
