//! A text as runs of chars in document order ([`Segment`]s): the form a
//! snapshot stores. Written from a text's items ([`TextState::segments`])
//! and built back into items, with the history
//! ([`items_from_history`]) or before it is loaded ([`PlainBuilder`],
//! origins filled in later by [`fill_origins`]). The snapshot's encoding
//! reads and writes the bytes; what an item is stays here.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::id::{Seq, TextIdx, NO_SEQ, UNKNOWN_ORIGIN};
use crate::oplog::{origins_at, OpKind, OpLog, NO_CONTENT};
use crate::unit::{bytes_of_chars, Unit};

use super::{Counts, Item, TextState, TreeBuilder};

/// A run of seq-contiguous items of one text, in document order, all
/// visible or all deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    pub seq: Seq,
    pub len: u32,
    pub deleted: bool,
}

/// A snapshot whose segments do not fit its text or history.
fn bad(what: &'static str) -> Error {
    Error::Inconsistent { what }
}

impl TextState {
    /// The text's segments, none spanning seq `split` (where a shallow
    /// snapshot's history starts), with its visible text (its items'
    /// text in `content`, the log's) and its counts.
    pub fn segments(&self, content: &str, split: Seq) -> (Vec<Segment>, String, Counts) {
        let mut segments: Vec<Segment> = Vec::new();
        let mut text = String::with_capacity(self.len(Unit::Utf8) as usize);
        let mut counts = Counts::default();
        for item in self.items() {
            counts.add(item.counts());
            if !item.deleted {
                let s = item.byte_start as usize;
                text.push_str(content.get(s..s + item.bytes as usize).unwrap_or(""));
            }
            // An item spanning `split` (kept whole by the document) is two
            // segments.
            let head = if item.seq < split && item.end() > split {
                split - item.seq
            } else {
                item.len
            };
            for (seq, len) in [(item.seq, head), (item.seq + head, item.len - head)] {
                if len == 0 {
                    continue;
                }
                match segments.last_mut() {
                    Some(last)
                        if last.seq + last.len == seq
                            && last.deleted == item.deleted
                            && seq != split =>
                    {
                        last.len += len;
                    }
                    _ => segments.push(Segment {
                        seq,
                        len,
                        deleted: item.deleted,
                    }),
                }
            }
        }
        (segments, text, counts)
    }

    /// The seqs of the text's deleted chars (not anchors) from seq `from`
    /// on, in document order.
    pub fn deleted_chars(&self, from: Seq) -> impl Iterator<Item = Range<Seq>> + '_ {
        self.items()
            .filter(move |i| i.deleted && !i.is_anchor() && i.end() > from)
            .map(move |i| i.seq.max(from)..i.end())
    }
}

/// Builds the tree of a text from its segments alone, before the history
/// is loaded: every char's origins are [`UNKNOWN_ORIGIN`] until
/// [`fill_origins`]. Enough for local edits, which never read origins.
/// Only for a text without marks (its anchors need the history).
pub(crate) struct PlainBuilder<'a> {
    built: TreeBuilder,
    /// The log's content up to the end of the text.
    content: &'a str,
    /// Where the next visible segment's text starts in `content`.
    at: usize,
    /// In an ASCII text every char is one byte and one UTF-16 unit, so no
    /// item needs its chars looked at.
    ascii: bool,
}

impl<'a> PlainBuilder<'a> {
    /// A builder for a text whose visible chars are `content[range]` (the
    /// log's content), with room for about `segments` items.
    pub fn new(content: &'a str, range: Range<usize>, segments: usize) -> Result<Self> {
        let content = content.get(..range.end).ok_or(bad("snapshot text"))?;
        Ok(PlainBuilder {
            built: TreeBuilder::with_capacity(segments),
            ascii: content.get(range.clone()).is_some_and(str::is_ascii),
            content,
            at: range.start,
        })
    }

    /// Appends the text's next segment.
    #[inline]
    pub fn push(&mut self, seg: Segment) -> Result<()> {
        let mut item = if self.ascii {
            ascii_item(seg, self.content.len(), &mut self.at)?
        } else {
            char_item(seg.seq, seg.len, seg.deleted, self.content, &mut self.at)?
        };
        item.origin_left = UNKNOWN_ORIGIN;
        item.origin_right = UNKNOWN_ORIGIN;
        self.built.push(item);
        Ok(())
    }

    /// The tree's leaves, once the segments used the whole text and gave
    /// the `counts` promised.
    pub fn finish(self, counts: Counts) -> Result<TreeBuilder> {
        if self.at != self.content.len() {
            return Err(bad("unused snapshot text"));
        }
        if self.built.counts() != counts {
            return Err(bad("snapshot text counts"));
        }
        Ok(self.built)
    }
}

/// The items of text `t` in document order, from its segments `segs` and
/// the loaded history `log`: `first_runs[j]` is the index of the op run
/// holding segment `j`'s first seq (a hint, checked), its visible chars
/// are `log.content()[range]`, chars below `trimmed` (a shallow
/// snapshot's root) have unknown origins, and no segment reaches past
/// seq `ops`. Checks each char against the history and the items'
/// counts against `counts`. Returns the items and how many ops of the
/// history they hold (every insert and anchor of the text, the caller
/// checks).
pub(crate) fn items_from_history(
    (segs, first_runs): (&[Segment], &[u32]),
    log: &OpLog,
    t: TextIdx,
    range: Range<usize>,
    (trimmed, ops): (Seq, Seq),
    counts: Counts,
) -> Result<(Vec<Item>, u64)> {
    let content = log.content().get(..range.end).ok_or(bad("snapshot text"))?;
    let mut items: Vec<Item> = Vec::with_capacity(segs.len() + segs.len() / 2);
    let mut at = range.start;
    let mut covered = 0u64;
    for (j, seg) in segs.iter().enumerate() {
        let end = seg.seq.checked_add(seg.len).filter(|&e| e <= ops);
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
                    (item.origin_left, item.origin_right) = if s < trimmed {
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
                OpKind::Delete { .. } | OpKind::MapSet { .. } | OpKind::Cancel { .. } => {
                    return Err(bad("segment op"))
                }
            }
            covered += u64::from(upto - s);
            s = upto;
            ri += 1;
        }
    }
    if at != range.end {
        return Err(bad("unused snapshot text"));
    }
    let mut got = Counts::default();
    for item in &items {
        got.add(item.counts());
    }
    if got != counts {
        return Err(bad("snapshot text counts"));
    }
    Ok((items, covered))
}

/// `items` of text `t` (built by [`PlainBuilder`] and edited since) with
/// the origins of the chars below seq `ops` (the snapshot's) filled in
/// from the loaded history `log` (unknown below `trimmed`), split where
/// those chars' op runs end. Checks that each snapshot char is an insert
/// of this text. Returns the items, how many chars of the history they
/// hold, and the snapshot's chars as segments (for the caller's check
/// that none is there twice).
pub(crate) fn fill_origins(
    log: &OpLog,
    t: TextIdx,
    items: impl Iterator<Item = Item>,
    (trimmed, ops): (Seq, Seq),
) -> Result<(Vec<Item>, u64, Vec<Segment>)> {
    let content = log.content().as_bytes();
    let mut out = Vec::new();
    let mut covered = 0u64;
    let mut snapshot_chars = Vec::new();
    for item in items {
        if item.seq >= ops {
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
            let tail = (rest.end() > run.end()).then(|| rest.split(run.end() - rest.seq, content));
            if rest.seq >= trimmed {
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
    Ok((out, covered, snapshot_chars))
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
        return Err(bad("segment text"));
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
        let (bytes, utf16) = bytes_of_chars(rest, len).ok_or(bad("segment text"))?;
        item.byte_start = *at as u32;
        item.bytes = bytes as u32;
        item.utf16 = utf16;
        *at += bytes;
    }
    Ok(item)
}
