//! Which ops a version lacks, as the pieces an update carries: the part
//! of each change it lacks, each op run clipped to it and split so that
//! an insert's text is all present or all left out (text the same update
//! deletes is not sent), and deletes never cross a change. The bytes
//! encoder and the in-memory merge of a snapshot both walk this.

use std::ops::Range;

use smallvec::SmallVec;

use crate::id::Seq;
use crate::version::VersionVector;

use super::{origins_at, OpKind, OpLog, OpRun, NO_CONTENT};

/// The ops of a log that a version lacks. See the module doc.
pub(crate) struct Missing {
    /// The part of each change the version lacks: (change index, seqs),
    /// in seq order.
    pub pieces: Vec<(usize, Range<Seq>)>,
    /// Seqs (sorted, merged) the pieces delete: their text is left out.
    deleted: Vec<Range<Seq>>,
}

impl OpLog {
    /// The ops `from` lacks. O(k log n) for k pieces, plus the deletes.
    pub fn missing(&self, from: &VersionVector) -> Missing {
        let pieces = self.changes_missing_from(from);
        let seq_pieces: Vec<Range<Seq>> = pieces.iter().map(|p| p.1.clone()).collect();
        let deleted = deleted_in_export(self, &seq_pieces);
        Missing { pieces, deleted }
    }
}

impl Missing {
    /// Calls `f` with every clipped run of `piece` (seqs), in order.
    pub fn for_each_run(&self, log: &OpLog, piece: &Range<Seq>, mut f: impl FnMut(&OpRun)) {
        let mut buf: SmallVec<[OpRun; 4]> = SmallVec::new();
        for (run, seqs) in log.runs_in(piece.clone()) {
            buf.clear();
            clip_run(log, run, seqs, &self.deleted, &mut buf);
            buf.iter().for_each(&mut f);
        }
    }
}

/// Seq ranges (sorted, merged) deleted by the ops in `pieces`.
fn deleted_in_export(log: &OpLog, pieces: &[Range<Seq>]) -> Vec<Range<Seq>> {
    let mut ranges = Vec::new();
    for piece in pieces {
        for (run, seqs) in log.runs_in(piece.clone()) {
            if let Some(t) = run.delete_targets(seqs.start - run.seq, seqs.end - seqs.start) {
                ranges.push(t);
            }
        }
    }
    ranges.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<Range<Seq>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// Splits `range` into sub-ranges that are entirely inside or entirely
/// outside the sorted `covered` ranges: `(sub-range, covered)`.
fn split_by_cover(range: Range<Seq>, covered: &[Range<Seq>]) -> SmallVec<[(Range<Seq>, bool); 4]> {
    let mut out = SmallVec::new();
    let mut at = range.start;
    let mut i = covered.partition_point(|c| c.end <= at);
    while at < range.end {
        match covered.get(i) {
            Some(c) if c.start <= at => {
                let end = c.end.min(range.end);
                out.push((at..end, true));
                at = end;
                i += 1;
            }
            Some(c) if c.start < range.end => {
                out.push((at..c.start, false));
                at = c.start;
            }
            _ => {
                out.push((at..range.end, false));
                at = range.end;
            }
        }
    }
    out
}

/// Pushes the part `range` of `run` to `out`, split so that each piece's
/// content is all present or all left out, and delete pieces never cross a
/// change (their targets are then one peer's consecutive counters).
fn clip_run(
    log: &OpLog,
    run: &OpRun,
    range: Range<Seq>,
    deleted: &[Range<Seq>],
    out: &mut SmallVec<[OpRun; 4]>,
) {
    match run.kind {
        OpKind::MarkStart { .. } | OpKind::MarkEnd { .. } => out.push(*run),
        OpKind::Insert { byte_start, .. } => {
            let text = run.content(log.content()).unwrap_or("").as_bytes();
            // Byte offset of char `chars` of the run, walking forward only.
            let (mut chars, mut bytes_at) = (0u32, 0u32);
            let mut byte_of = |offset: u32| {
                if text.len() == run.len as usize {
                    return offset; // ASCII
                }
                let rest = text.get(bytes_at as usize..).unwrap_or(&[]);
                bytes_at += crate::text::prefix_units(rest, offset - chars).0;
                chars = offset;
                bytes_at
            };
            for (sub, covered) in split_by_cover(range, deleted) {
                let offset = sub.start - run.seq;
                let (origin_left, origin_right) = origins_at(run, offset);
                let (start, bytes) = if covered || byte_start == NO_CONTENT {
                    (NO_CONTENT, 0)
                } else {
                    let a = byte_of(offset);
                    let b = byte_of(sub.end - run.seq);
                    (byte_start + a, b - a)
                };
                out.push(OpRun {
                    seq: sub.start,
                    len: sub.end - sub.start,
                    text: run.text,
                    kind: OpKind::Insert {
                        origin_left,
                        origin_right,
                        byte_start: start,
                        bytes,
                    },
                });
            }
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_by_cover_alternates() {
        let covered = [2..4, 6..7];
        let parts: Vec<_> = split_by_cover(0..8, &covered).into_iter().collect();
        assert_eq!(
            parts,
            vec![
                (0..2, false),
                (2..4, true),
                (4..6, false),
                (6..7, true),
                (7..8, false)
            ]
        );
        let parts: Vec<_> = split_by_cover(3..5, &covered).into_iter().collect();
        assert_eq!(parts, vec![(3..4, true), (4..5, false)]);
    }
}
