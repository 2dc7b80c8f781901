//! A snapshot's history blocks in format version 4: the op runs of
//! `snapshot_history.rs` (same canonical runs, same kinds) written as columns,
//! each compressed on its own, with the origins of inserts predicted
//! from the document order the segments already store.
//!
//! ```text
//! block "h" + u32 BE s: the runs from seq s on, about BLOCK_BYTES of
//!     column bytes (a block ends after the run that reaches that size):
//!     varint number of runs, then four columns, each as varint byte
//!     length + a compressed value (varint raw length + raw deflate, or
//!     0 + the raw bytes):
//!   heads    per run, as in versions 1-3: u8 kind (bits 0-2 kind, bit 3
//!            a text index follows, bits 4-7 the length if 1..=15),
//!            [varint length] [varint text index]
//!   origins  per insert run: varint left: 0 = the char before the run's
//!            first char in the document order of the snapshot's segments
//!            (none at the start of its text), 1 = none, else seq - left
//!            + 1; varint right: 0 = the char after the run's last char in
//!            that order (none at the end), 1 = none, else zigzag(right -
//!            base) + 2 (base: the left origin, or the run's seq without
//!            one). Per mark op: its origins as in versions 1-3
//!   targets  per delete run: varint zigzag(first target - C), C = the
//!            last char the block's previous insert or delete run touched
//!            (an insert's last char, a delete's last target), the run's
//!            own seq at first
//!   extras   mark start: u8 expand rule, varint length + UTF-8 key, the
//!            value; mark end: varint seq - its start's seq; map op
//!            (kind 5, length 1): varint map index, varint length +
//!            UTF-8 key, u8 0 (delete) or 1 and the value
//! ```
//!
//! Text typed in one go sits in the final document right after its left
//! origin and right before its right one, so most origins are 0 (B4: 87%
//! of left origins, 86% of right ones) and deflate makes little of them;
//! kinds, lengths, targets and origins compress better apart than
//! interleaved (B4's history: 48.3 KB in versions 1-3, 25.6 KB here).

use crate::error::Result;
use crate::id::{Seq, TextIdx, NO_SEQ};
use crate::oplog::{OpKind, OpLog, OpRun};
use crate::value::Value;

use super::packed::{pack, unpack, Codec, Framing};
use super::snapshot_history::{read_map_set, read_mark_end, read_mark_start, seq_at, unplaced};
use super::value_bytes::{write_map_value, write_value};
use crate::bytes::{unzigzag, write_bytes, write_varint, zigzag, Reader};
use crate::text::Segment;

/// Column bytes (before compression) after which a block ends: large, as
/// deflate makes more of long columns and the loader reads every block.
pub(crate) const BLOCK_BYTES: usize = if cfg!(feature = "small-nodes") {
    32
} else {
    64 * 1024
};

const INSERT: u8 = 0;
const DELETE: u8 = 1;
const DELETE_BACKWARDS: u8 = 2;
const MARK_START: u8 = 3;
const MARK_END: u8 = 4;
const MAP_SET: u8 = 5;
/// A cancel run (version 6): in extras, varint seq - its first target.
const CANCEL: u8 = 6;
const FLAG_TEXT: u8 = 1 << 3;

/// The chars next to a seq in the document order of a snapshot's
/// segments: what the origins of an insert are predicted to be. Asked
/// in increasing seq order (the order of the history), it walks the
/// segments by seq with two cursors; asked out of order, it searches.
pub(crate) struct Neighbours {
    /// Every text's segments in document order, the texts one after the
    /// other: (first seq, length, snapshot text index).
    segs: Vec<(Seq, u32, u32)>,
    /// Indexes into `segs`, by first seq.
    by_seq: Vec<u32>,
    /// Positions in `by_seq` of the last lookups of a first and a last
    /// char.
    at_first: usize,
    at_last: usize,
}

impl Neighbours {
    /// The neighbours of `segs` ((first seq, length, text) in document
    /// order), given their indexes sorted by first seq.
    pub fn new(segs: Vec<(Seq, u32, u32)>, by_seq: Vec<u32>) -> Neighbours {
        Neighbours {
            segs,
            by_seq,
            at_first: 0,
            at_last: 0,
        }
    }

    /// From the segments of each text (document order).
    pub fn from_texts<'a>(texts: impl Iterator<Item = &'a [Segment]>) -> Neighbours {
        let mut segs = Vec::new();
        for (t, list) in texts.enumerate() {
            segs.extend(list.iter().map(|s| (s.seq, s.len, t as u32)));
        }
        let mut by_seq: Vec<u32> = (0..segs.len() as u32).collect();
        by_seq.sort_unstable_by_key(|&i| segs.get(i as usize).map_or(0, |s| s.0));
        Neighbours::new(segs, by_seq)
    }

    /// Index into `segs` of the segment holding `seq`, moving `at`.
    fn find(&self, at: &mut usize, seq: Seq) -> Option<usize> {
        let start = |k: usize| -> Option<(Seq, Seq)> {
            let i = *self.by_seq.get(k)? as usize;
            let s = self.segs.get(i)?;
            Some((s.0, s.0.saturating_add(s.1)))
        };
        if start(*at).is_some_and(|(s, _)| s > seq) {
            // Out of order: search from the start.
            *at = self
                .by_seq
                .partition_point(|&i| self.segs.get(i as usize).is_some_and(|s| s.0 <= seq))
                .saturating_sub(1);
        }
        while start(*at).is_some_and(|(_, end)| end <= seq) {
            *at += 1;
        }
        let (s, end) = start(*at)?;
        if s <= seq && seq < end {
            self.by_seq.get(*at).map(|&i| i as usize)
        } else {
            None
        }
    }

    /// The char before `first` and the char after `last` in document
    /// order (`NO_SEQ`: none, at the start or end of the text), or
    /// `None` when a segment does not hold one of them.
    pub fn around(&mut self, first: Seq, last: Seq) -> Option<(Seq, Seq)> {
        let mut at = self.at_first;
        let k = self.find(&mut at, first)?;
        self.at_first = at;
        let &(seq, _, text) = self.segs.get(k)?;
        let before = if first > seq {
            first - 1
        } else {
            match k.checked_sub(1).and_then(|j| self.segs.get(j)) {
                Some(&(s, len, t)) if t == text && len > 0 => s.saturating_add(len - 1),
                _ => NO_SEQ,
            }
        };
        let mut at = self.at_last;
        let k = self.find(&mut at, last)?;
        self.at_last = at;
        let &(seq, len, text) = self.segs.get(k)?;
        let after = if last.saturating_add(1) < seq.saturating_add(len) {
            last + 1
        } else {
            match self.segs.get(k + 1) {
                Some(&(s, _, t)) if t == text => s,
                _ => NO_SEQ,
            }
        };
        Some((before, after))
    }
}

/// Writes one block's runs as columns.
pub(crate) struct ColumnWriter {
    heads: Vec<u8>,
    origins: Vec<u8>,
    targets: Vec<u8>,
    extras: Vec<u8>,
    runs: u64,
    /// The text of the previous run (the first run's is written unless
    /// it is text 0).
    text: TextIdx,
    /// The last char the previous insert or delete run touched.
    cursor: Option<Seq>,
}

impl ColumnWriter {
    pub fn new() -> Self {
        ColumnWriter {
            heads: Vec::with_capacity(4096),
            origins: Vec::with_capacity(4096),
            targets: Vec::with_capacity(4096),
            extras: Vec::new(),
            runs: 0,
            text: TextIdx::default(),
            cursor: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.runs == 0
    }

    /// Whether the block has reached [`BLOCK_BYTES`].
    pub fn is_full(&self) -> bool {
        self.heads.len() + self.origins.len() + self.targets.len() + self.extras.len()
            >= BLOCK_BYTES
    }

    /// Origins as versions 1-3 write them (for mark ops).
    fn plain_origins(&mut self, seq: Seq, left: Seq, right: Seq) {
        let out = &mut self.origins;
        write_varint(
            out,
            if left == NO_SEQ {
                0
            } else {
                u64::from(seq - left)
            },
        );
        let base = if left == NO_SEQ { seq } else { left };
        write_varint(
            out,
            if right == NO_SEQ {
                0
            } else {
                zigzag(i64::from(right) - i64::from(base)) + 1
            },
        );
    }

    pub fn push(&mut self, log: &OpLog, run: &OpRun, neighbours: &mut Neighbours) {
        if let OpKind::MapSet { set } = run.kind {
            self.heads.push(MAP_SET | 1 << 4);
            let m = log.map_set(set);
            let out = &mut self.extras;
            write_varint(out, m.map_or(0, |m| u64::from(u32::from(m.map))));
            write_bytes(out, m.map_or(&b""[..], |m| m.key.as_bytes()));
            write_map_value(out, m.and_then(|m| m.value.as_ref()));
            self.runs += 1;
            return;
        }
        let kind = match run.kind {
            OpKind::Insert { .. } => INSERT,
            OpKind::Delete {
                reversed: false, ..
            } => DELETE,
            OpKind::Delete { reversed: true, .. } => DELETE_BACKWARDS,
            OpKind::MarkStart { .. } => MARK_START,
            OpKind::MarkEnd { .. } => MARK_END,
            OpKind::MapSet { .. } => MAP_SET,
            OpKind::Cancel { .. } => CANCEL,
        };
        let flag = if run.text != self.text {
            self.text = run.text;
            FLAG_TEXT
        } else {
            0
        };
        if (1..16).contains(&run.len) {
            self.heads.push(kind | flag | (run.len as u8) << 4);
        } else {
            self.heads.push(kind | flag);
            write_varint(&mut self.heads, u64::from(run.len));
        }
        if flag != 0 {
            write_varint(&mut self.heads, u64::from(u32::from(run.text)));
        }
        match run.kind {
            OpKind::Insert {
                origin_left: left,
                origin_right: right,
                ..
            } => {
                let last = run.seq + run.len - 1;
                let (before, after) = neighbours
                    .around(run.seq, last)
                    .unwrap_or((NO_SEQ - 1, NO_SEQ - 1));
                let l = if left == before {
                    0
                } else if left == NO_SEQ {
                    1
                } else {
                    u64::from(run.seq - left) + 1
                };
                let base = if left == NO_SEQ { run.seq } else { left };
                let r = if right == after {
                    0
                } else if right == NO_SEQ {
                    1
                } else {
                    zigzag(i64::from(right) - i64::from(base)) + 2
                };
                write_varint(&mut self.origins, l);
                write_varint(&mut self.origins, r);
                self.cursor = Some(last);
            }
            OpKind::Delete { target, reversed } => {
                let base = self.cursor.unwrap_or(run.seq);
                write_varint(
                    &mut self.targets,
                    zigzag(i64::from(target) - i64::from(base)),
                );
                self.cursor = Some(if reversed {
                    target - (run.len - 1)
                } else {
                    target + (run.len - 1)
                });
            }
            OpKind::MarkStart {
                origin_left,
                origin_right,
                mark,
            } => {
                self.plain_origins(run.seq, origin_left, origin_right);
                let m = log.mark(mark);
                self.extras.push(m.map_or(0, |m| m.expand.to_byte()));
                let key = m.map_or("", |m| log.keys().name(m.key));
                write_bytes(&mut self.extras, key.as_bytes());
                write_value(&mut self.extras, m.map_or(&Value::Null, |m| &m.value));
            }
            OpKind::MarkEnd {
                origin_left,
                origin_right,
                mark,
            } => {
                self.plain_origins(run.seq, origin_left, origin_right);
                let start = log.mark(mark).map_or(run.seq, |m| m.start);
                write_varint(&mut self.extras, u64::from(run.seq - start));
            }
            OpKind::Cancel { target } => {
                write_varint(&mut self.extras, u64::from(run.seq - target));
            }
            OpKind::MapSet { .. } => {}
        }
        self.runs += 1;
    }

    /// The block's bytes; the writer starts over.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut block = Vec::new();
        write_varint(&mut block, self.runs);
        for column in [
            &mut self.heads,
            &mut self.origins,
            &mut self.targets,
            &mut self.extras,
        ] {
            write_bytes(&mut block, &pack(column, Codec::Deflate));
            column.clear();
        }
        self.runs = 0;
        self.text = TextIdx::default();
        self.cursor = None;
        block
    }
}

/// Reads the runs of one version 4 block starting at seq `seq`, as
/// [`super::snapshot_history::decode_block`] reads older ones; `neighbours`
/// gives the predicted origins; `version` is the snapshot's format
/// version (6: columns name their codec, cancel runs).
pub(crate) fn decode_block(
    (bytes, version): (&[u8], u8),
    mut seq: Seq,
    limit: Seq,
    (texts, maps): (u32, u32),
    neighbours: &mut Neighbours,
    log: &mut OpLog,
    mut f: impl FnMut(&mut OpLog, OpRun) -> Result<()>,
) -> Result<Seq> {
    let mut r = Reader::new(bytes, 0);
    // Not `count`: the columns are compressed, so a block may hold more
    // runs than bytes. Each run takes at least one byte of the heads
    // column, which bounds the count once it is unpacked.
    let n = r.varint()?;
    let framing = Framing::snapshot(version, Codec::Deflate);
    let mut columns = Vec::with_capacity(4);
    for what in ["run heads", "run origins", "delete targets", "run extras"] {
        columns.push(unpack(r.bytes()?, what, framing)?);
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing block bytes"));
    }
    let [heads, origins, targets, extras] = columns.as_slice() else {
        return Err(r.malformed("block columns"));
    };
    if n > heads.len() as u64 {
        return Err(r.malformed("run count"));
    }
    let mut heads = Reader::new(heads, 0);
    let mut origins = Reader::new(origins, 0);
    let mut targets = Reader::new(targets, 0);
    let mut extras = Reader::new(extras, 0);
    let mut text = 0u32;
    let mut cursor: Option<Seq> = None;
    for _ in 0..n {
        let byte = heads.u8()?;
        let kind = byte & 0b111;
        let len = match u32::from(byte >> 4) {
            0 => heads.u32("run length")?,
            l => l,
        };
        if kind == MAP_SET {
            if len != 1 || byte & FLAG_TEXT != 0 || seq >= limit {
                return Err(heads.malformed("map op"));
            }
            read_map_set(&mut extras, log, seq, maps)?;
            seq += 1;
            continue;
        }
        if byte & FLAG_TEXT != 0 {
            text = heads.u32("text index")?;
        }
        let end = seq.checked_add(len).filter(|&e| e <= limit && len > 0);
        if text >= texts || end.is_none() {
            return Err(heads.malformed("op run"));
        }
        let kind = match kind {
            INSERT => {
                let last = seq + len - 1;
                let (l, v) = (origins.varint()?, origins.varint()?);
                let predicted = if l == 0 || v == 0 {
                    neighbours.around(seq, last)
                } else {
                    None
                };
                let left = match (l, predicted) {
                    (0, Some((before, _))) => before,
                    (1, _) => NO_SEQ,
                    (l, _) if l >= 2 => u32::try_from(l - 1)
                        .ok()
                        .and_then(|back| seq.checked_sub(back))
                        .unwrap_or(NO_SEQ),
                    _ => return Err(origins.malformed("left origin")),
                };
                if left != NO_SEQ && left >= seq || (l >= 2 && left == NO_SEQ) {
                    return Err(origins.malformed("left origin"));
                }
                let base = if left == NO_SEQ { seq } else { left };
                let right = match (v, predicted) {
                    (0, Some((_, after))) => Some(after),
                    (1, _) => Some(NO_SEQ),
                    (v, _) if v >= 2 => seq_at(base, unzigzag(v - 2)).filter(|&s| s != NO_SEQ),
                    _ => None,
                };
                let right = right
                    .filter(|&s| s == NO_SEQ || s < seq)
                    .ok_or_else(|| origins.malformed("right origin"))?;
                cursor = Some(last);
                unplaced(left, right)
            }
            DELETE | DELETE_BACKWARDS => {
                let base = cursor.unwrap_or(seq);
                let reversed = kind == DELETE_BACKWARDS;
                // Both ends are earlier ops: the run's targets lie between.
                let span = i64::from(len - 1);
                let target = seq_at(base, unzigzag(targets.varint()?)).filter(|&t| t < seq);
                let last = target
                    .and_then(|t| seq_at(t, if reversed { -span } else { span }))
                    .filter(|&l| l < seq);
                let (Some(target), Some(last)) = (target, last) else {
                    return Err(targets.malformed("delete target"));
                };
                cursor = Some(last);
                OpKind::Delete { target, reversed }
            }
            MARK_START | MARK_END => {
                if len != 1 {
                    return Err(heads.malformed("mark op length"));
                }
                let origins = plain_origins(&mut origins, seq)?;
                if kind == MARK_START {
                    read_mark_start(&mut extras, log, seq, origins)?
                } else {
                    read_mark_end(&mut extras, log, seq, origins)?
                }
            }
            CANCEL if version >= 6 => {
                // Every target is an earlier op.
                let back = extras.u32("cancel target")?;
                let target = seq
                    .checked_sub(back)
                    .filter(|&t| back > 0 && t.checked_add(len).is_some_and(|e| e <= seq))
                    .ok_or_else(|| extras.malformed("cancel target"))?;
                OpKind::Cancel { target }
            }
            _ => return Err(heads.malformed("op kind")),
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
    for column in [&heads, &origins, &targets, &extras] {
        if !column.is_empty() {
            return Err(column.malformed("trailing column bytes"));
        }
    }
    Ok(seq)
}

/// Origins as versions 1-3 write them: earlier ops, or none.
fn plain_origins(r: &mut Reader<'_>, seq: Seq) -> Result<(Seq, Seq)> {
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
}
