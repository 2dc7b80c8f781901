//! A shallow snapshot's root (the ops below where its history starts):
//! the chars it shows that later ops deleted (the "e" ranges), and the
//! stand-in op runs a loader puts in place of the root's history.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::id::{Seq, TextIdx, NO_SEQ, UNKNOWN_ORIGIN};
use crate::oplog::{check, OpKind, OpLog, OpRun};

use super::load::{push_insert, run_at, SegmentCursor};
use super::snapshot_history;
use super::snapshot_maps::RootSet;
use crate::bytes::{bounded_capacity, write_varint, Reader};

/// The chars below `trimmed` (a shallow snapshot's root) visible at the
/// root and deleted now (see [`OpLog::visible_later`]).
pub(super) fn deleted_later(log: &OpLog, trimmed: Seq) -> Vec<Range<Seq>> {
    if trimmed == 0 {
        return Vec::new();
    }
    log.visible_later(trimmed)
}

/// The "e" value: `ranges` as varint n, then per range varint (start -
/// the previous range's end), varint length.
pub(super) fn encode_ranges(ranges: &[Range<Seq>]) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, ranges.len() as u64);
    let mut at = 0;
    for r in ranges {
        write_varint(&mut out, u64::from(r.start - at));
        write_varint(&mut out, u64::from(r.end - r.start));
        at = r.end;
    }
    out
}

/// Reads what [`encode_ranges`] wrote: non-empty ranges, in order, apart,
/// below `limit`.
pub(super) fn decode_ranges(value: &[u8], limit: Seq) -> Result<Vec<Range<Seq>>> {
    let mut r = Reader::new(value, 0);
    let n = r.count("range count")?;
    let mut out: Vec<Range<Seq>> = Vec::with_capacity(bounded_capacity(n));
    let mut at: Seq = 0;
    for _ in 0..n {
        let gap = r.u32("range start")?;
        let len = r.u32("range length")?;
        let start = at.checked_add(gap).filter(|_| gap > 0 || out.is_empty());
        let end = start
            .and_then(|s| s.checked_add(len))
            .filter(|&e| e <= limit && len > 0);
        let (Some(start), Some(end)) = (start, end) else {
            return Err(r.malformed("range"));
        };
        out.push(start..end);
        at = end;
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing range bytes"));
    }
    Ok(out)
}

/// The start seqs of the marks started below `trimmed` (a shallow
/// snapshot's root) that are cancelled (key "C", version 7), in order.
/// No op after the root cancels one of the root's (see
/// [`OpLog::cancel_below`]), so this is what the root shows.
pub(super) fn cancelled_root_marks(log: &OpLog, trimmed: Seq) -> Vec<Seq> {
    let mut starts: Vec<Seq> = log
        .marks()
        .iter()
        .filter(|m| m.start < trimmed && m.cancelled)
        .map(|m| m.start)
        .collect();
    starts.sort_unstable();
    starts
}

/// The "C" value: `starts` (increasing) as varint n, then per start
/// varint (start - the previous start; the first: its start).
pub(super) fn encode_starts(starts: &[Seq]) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, starts.len() as u64);
    let mut at = 0;
    for &s in starts {
        write_varint(&mut out, u64::from(s - at));
        at = s;
    }
    out
}

/// Reads what [`encode_starts`] wrote: increasing seqs below `limit`.
pub(super) fn decode_starts(value: &[u8], limit: Seq) -> Result<Vec<Seq>> {
    let mut r = Reader::new(value, 0);
    let n = r.count("cancelled root mark count")?;
    let mut out: Vec<Seq> = Vec::with_capacity(bounded_capacity(n));
    let mut at: Seq = 0;
    for _ in 0..n {
        // An error names the varint's first byte.
        let offset = r.offset();
        let gap = r.u32("cancelled root mark")?;
        let start = at
            .checked_add(gap)
            .filter(|&s| (gap > 0 || out.is_empty()) && s < limit);
        let Some(start) = start else {
            return Err(Error::Malformed {
                offset,
                what: "cancelled root mark",
            });
        };
        out.push(start);
        at = start;
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing cancelled root mark bytes"));
    }
    Ok(out)
}

/// Marks the root marks starting at `starts` (what [`decode_starts`]
/// read) cancelled in `log`, which [`push_root`] filled;
/// `Inconsistent` if one is not a root mark's start.
pub(super) fn cancel_root_marks(log: &mut OpLog, starts: &[Seq], trimmed: Seq) -> Result<()> {
    for &s in starts {
        // The root's marks come first, by start (`push_root` made them).
        let root = log.marks().partition_point(|m| m.start < trimmed);
        let i = log
            .marks()
            .get(..root)
            .map(|marks| marks.partition_point(|m| m.start < s));
        let mark = i
            .filter(|&i| log.marks().get(i).is_some_and(|m| m.start == s))
            .ok_or(Error::Inconsistent {
                what: "cancelled root mark",
            })?;
        log.set_mark_cancelled(crate::id::MarkIdx::new(mark as u32), true);
    }
    Ok(())
}

/// Puts stand-in op runs for a shallow snapshot's trimmed root (the seqs
/// below `trimmed`) into `log` (which holds no run yet), from the
/// segments the cursor walks: inserts without origins (see
/// `oplog/trimmed.rs`), the anchors of the root's `marks` with their
/// glue, its map ops that still win (`sets`) as themselves, and for the
/// seqs no segment holds (deletes, map ops that lost) delete runs
/// without targets. Checks the marks' anchors and glue as the history's.
pub(super) fn push_root(
    log: &mut OpLog,
    cursor: &mut SegmentCursor<'_>,
    trimmed: Seq,
    (marks, sets): (&[snapshot_history::RootMark], &[RootSet]),
    later: &[Range<Seq>],
    doc_index: &[TextIdx],
) -> Result<()> {
    let bad = |what| Error::Inconsistent { what };
    let mut later = later.iter().peekable();
    let mut anchors: Vec<(Seq, usize, bool)> = Vec::with_capacity(marks.len() * 2);
    for (i, m) in marks.iter().enumerate() {
        anchors.push((m.start, i, false));
        if let Some((end, _)) = m.end {
            anchors.push((end, i, true));
        }
    }
    anchors.sort_unstable();
    if anchors
        .windows(2)
        .any(|w| matches!(w, [a, b] if a.0 == b.0))
    {
        return Err(bad("root mark anchor"));
    }
    let mut ids: Vec<Option<crate::id::MarkIdx>> = vec![None; marks.len()];
    let mut next_anchor = 0usize;
    let stand_in_text = doc_index.first().copied().unwrap_or(TextIdx::new(0));
    let mut sets = sets.iter().peekable();
    let mut gap = |log: &mut OpLog, from: Seq, to: Seq| {
        let mut at = from;
        while at < to {
            // The root's winning map ops in the gap are themselves.
            let set = sets.next_if(|s| s.seq < to);
            let upto = set.map_or(to, |s| s.seq);
            if upto > at {
                log.push_op_unmerged(OpRun {
                    seq: at,
                    len: upto - at,
                    text: stand_in_text,
                    kind: OpKind::Delete {
                        target: 0,
                        reversed: false,
                    },
                });
            }
            match set {
                // One inside a segment, or out of order.
                Some(s) if s.seq < at => return Err(bad("root map op")),
                Some(s) => {
                    log.push_map_set(s.seq, s.map, &s.key, s.value.clone());
                    at = s.seq + 1;
                }
                None => at = upto,
            }
        }
        Ok(())
    };
    let mut at: Seq = 0;
    let segs = cursor.segs;
    for &&(seg, ti, _) in segs.iter().take_while(|s| s.0.seq < trimmed) {
        let end = seg.seq.checked_add(seg.len).filter(|&e| e <= trimmed);
        let end = end.ok_or(bad("root segment"))?;
        if seg.seq < at {
            return Err(bad("root segment"));
        }
        gap(log, at, seg.seq)?;
        let text = *doc_index.get(ti as usize).ok_or(bad("text index"))?;
        let mut s = seg.seq;
        while s < end {
            let next = anchors.get(next_anchor).copied();
            if next.is_some_and(|(a, ..)| a < s) {
                return Err(bad("root mark anchor"));
            }
            let Some((_, i, is_end)) = next.filter(|&(a, ..)| a == s) else {
                let mut upto = next.map_or(end, |(a, ..)| a.min(end));
                // Split where the chars deleted after the root (which
                // have text) start and end.
                while later.peek().is_some_and(|r| r.end <= s) {
                    later.next();
                }
                cursor.root_text = false;
                if let Some(r) = later.peek() {
                    if r.start <= s {
                        cursor.root_text = true;
                        upto = upto.min(r.end);
                    } else {
                        upto = upto.min(r.start);
                    }
                }
                push_insert(
                    log,
                    cursor,
                    s,
                    upto - s,
                    text,
                    (UNKNOWN_ORIGIN, UNKNOWN_ORIGIN),
                )?;
                cursor.root_text = false;
                s = upto;
                continue;
            };
            let m = marks.get(i).ok_or(bad("root mark"))?;
            if !seg.deleted || doc_index.get(m.text as usize) != Some(&text) {
                return Err(bad("root mark anchor"));
            }
            let kind = if is_end {
                let mark = ids.get(i).copied().flatten().ok_or(bad("root mark end"))?;
                // Both anchors are in the mark's text (checked above).
                let open = log.mark(mark).is_some_and(|m| m.end == NO_SEQ);
                if !check::mark_end(m.start, text, open, text, s) {
                    return Err(bad("root mark end"));
                }
                log.end_mark(mark, s).ok_or(bad("root mark end"))?;
                let (_, (origin_left, origin_right)) = m.end.ok_or(bad("root mark end"))?;
                OpKind::MarkEnd {
                    origin_left,
                    origin_right,
                    mark,
                }
            } else {
                let mark = log.start_mark(&m.key, m.value.clone(), m.expand, s);
                if let Some(slot) = ids.get_mut(i) {
                    *slot = Some(mark);
                }
                let (origin_left, origin_right) = m.start_origins;
                OpKind::MarkStart {
                    origin_left,
                    origin_right,
                    mark,
                }
            };
            log.push_op_unmerged(OpRun {
                seq: s,
                len: 1,
                text,
                kind,
            });
            next_anchor += 1;
            s += 1;
        }
        at = end;
    }
    gap(log, at, trimmed)?;
    // Every root map op fell in a gap (none inside a segment).
    if sets.next().is_some() {
        return Err(bad("root map op"));
    }
    if next_anchor != anchors.len() {
        return Err(bad("root mark anchor"));
    }
    // Origins and glue, by the rules every anchor meets.
    for &(seq, i, is_end) in &anchors {
        let run = run_at(log, seq).ok_or(bad("root mark"))?;
        let (m, a) = (marks.get(i), run.kind.anchor());
        let (Some(m), Some(a)) = (m, a) else {
            return Err(bad("root mark"));
        };
        let (left, right) = (a.origin_left, a.origin_right);
        if check::glue(m.expand, is_end, check::named(left), check::named(right)).is_err()
            || !check::origin(log, left, run.text, seq)
            || !check::origin(log, right, run.text, seq)
        {
            return Err(bad("root mark glue"));
        }
    }
    Ok(())
}
