//! [`Item`]: a run of chars typed in sequence by one peer, the list element of
//! the sequence CRDT.

use crate::id::{MarkIdx, Seq};
use crate::oplog::{AnchorOp, NO_CONTENT};
use crate::style::ExpandType;
use crate::unit::prefix_units;

use super::chunk::Counts;

/// Chars `seq..seq + len` (insert ops of one run, in order), all visible or
/// all deleted (tombstones).
///
/// The first char was inserted between `origin_left` and `origin_right`; each
/// later char has its predecessor in the run as left origin and shares
/// `origin_right`. A run is split when something lands inside it or part of
/// it is deleted; two runs are merged back when [`Item::can_append`] allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Item {
    pub seq: Seq,
    pub len: u32,
    pub origin_left: Seq,
    pub origin_right: Seq,
    /// Offset of the run's UTF-8 text in the op log's content, or
    /// [`NO_CONTENT`] when this document never received it (then the item is
    /// deleted and `bytes == utf16 == 0`).
    pub byte_start: u32,
    pub bytes: u32,
    pub utf16: u32,
    pub deleted: bool,
    /// 0 for chars; for a style anchor (always `len == 1` and `deleted`:
    /// it holds no visible text; `byte_start` = its mark's index in the op
    /// log) a combination of [`ANCHOR`], [`ANCHOR_END`] and
    /// [`STICKS_LEFT`].
    pub anchor: u8,
}

/// Set in [`Item::anchor`] for every style anchor.
pub(crate) const ANCHOR: u8 = 1;
/// The anchor ends its mark (else it starts it).
pub(crate) const ANCHOR_END: u8 = 2;
/// The anchor is glued to the char before it (`origin_left`; text typed
/// after that char goes after the anchor). Without it, the anchor is
/// glued to the char after it (`origin_right`; text typed before that
/// char goes before the anchor).
pub(crate) const STICKS_LEFT: u8 = 4;

impl Item {
    /// One past the last seq.
    #[inline]
    pub fn end(&self) -> Seq {
        self.seq + self.len
    }

    #[inline]
    pub fn contains(&self, seq: Seq) -> bool {
        seq.wrapping_sub(self.seq) < self.len
    }

    /// What the item adds to its chunk's visible counts. Anchors are
    /// flagged deleted (they hold no visible text), so the common case, a
    /// visible char run, takes one branch.
    #[inline]
    pub fn counts(&self) -> Counts {
        if self.deleted {
            Counts {
                anchors: u32::from(self.anchor != 0),
                ..Counts::default()
            }
        } else {
            Counts {
                chars: self.len,
                utf8: self.bytes,
                utf16: self.utf16,
                anchors: 0,
            }
        }
    }

    /// Whether this is a style anchor.
    #[inline]
    pub fn is_anchor(&self) -> bool {
        self.anchor != 0
    }

    /// Whether this holds visible chars.
    #[inline]
    pub fn is_visible_text(&self) -> bool {
        !self.deleted
    }

    /// For an anchor, the index of its mark.
    #[inline]
    pub fn mark(&self) -> MarkIdx {
        MarkIdx::new(self.byte_start)
    }

    /// The style anchor item of mark op `seq` (`a`, of a mark expanding by
    /// `expand`, which decides the side it sticks to). The one constructor
    /// of anchors: local marks, merged updates and loaded snapshots all
    /// call it.
    pub fn anchor(seq: Seq, a: AnchorOp, expand: ExpandType) -> Item {
        let sticks_left = if expand.anchor_sticks_left(a.end) {
            STICKS_LEFT
        } else {
            0
        };
        let end = if a.end { ANCHOR_END } else { 0 };
        Item {
            seq,
            len: 1,
            origin_left: a.origin_left,
            origin_right: a.origin_right,
            byte_start: u32::from(a.mark),
            bytes: 0,
            utf16: 0,
            deleted: true,
            anchor: ANCHOR | sticks_left | end,
        }
    }

    /// Whether `next` continues this run (so the two can be one item).
    #[inline]
    pub fn can_append(&self, next: &Item) -> bool {
        next.deleted == self.deleted && self.continues_into(next)
    }

    /// Whether `next` holds the chars typed right after this run's, with
    /// this run's right origin: the two are one run but for deletion.
    #[inline]
    pub fn continues_into(&self, next: &Item) -> bool {
        // Only `next` can be an anchor here: nothing has an anchor as its
        // left origin.
        next.seq == self.end()
            && next.anchor == 0
            && next.origin_left == self.end() - 1
            && next.origin_right == self.origin_right
            && if self.byte_start == NO_CONTENT {
                next.byte_start == NO_CONTENT
            } else {
                self.byte_start + self.bytes == next.byte_start
            }
    }

    /// Appends `next` (which [`Item::can_append`]) to this run.
    #[inline]
    pub fn append(&mut self, next: &Item) {
        self.len += next.len;
        self.bytes += next.bytes;
        self.utf16 += next.utf16;
    }

    /// Byte offset of char `chars` (at most `len`) in `text`, the run's
    /// text: O(1) for an ASCII run, else O(chars).
    #[inline]
    pub fn byte_offset(&self, text: &str, chars: u32) -> usize {
        if self.bytes == self.len {
            chars as usize
        } else {
            prefix_units(text.as_bytes(), chars).0 as usize
        }
    }

    /// Splits off chars `offset..` as a new item; `self` keeps `..offset`.
    /// `content` is the op log's content (to find the byte offset).
    pub fn split(&mut self, offset: u32, content: &[u8]) -> Item {
        debug_assert!(0 < offset && offset < self.len);
        let (bytes, utf16) = if self.byte_start == NO_CONTENT {
            (0, 0)
        } else if self.bytes == self.len {
            (offset, offset) // ASCII
        } else {
            let start = self.byte_start as usize;
            let text = content
                .get(start..start + self.bytes as usize)
                .unwrap_or(&[]);
            prefix_units(text, offset)
        };
        let right = Item {
            seq: self.seq + offset,
            len: self.len - offset,
            origin_left: self.seq + offset - 1,
            origin_right: self.origin_right,
            byte_start: if self.byte_start == NO_CONTENT {
                NO_CONTENT
            } else {
                self.byte_start + bytes
            },
            bytes: self.bytes - bytes,
            utf16: self.utf16 - utf16,
            deleted: self.deleted,
            anchor: 0,
        };
        self.len = offset;
        self.bytes = bytes;
        self.utf16 = utf16;
        right
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::NO_SEQ;
    use crate::unit::{char_len, utf16_len};

    fn item(text_start: u32, text: &str) -> Item {
        Item {
            seq: 10,
            len: char_len(text),
            origin_left: NO_SEQ,
            origin_right: NO_SEQ,
            byte_start: text_start,
            bytes: text.len() as u32,
            utf16: utf16_len(text),
            deleted: false,
            anchor: 0,
        }
    }

    #[test]
    fn split_counts_multibyte_chars() {
        let content = "xxa😀b文c".as_bytes();
        let mut a = item(2, "a😀b文c");
        let b = a.split(2, content);
        assert_eq!((a.len, a.bytes, a.utf16), (2, 5, 3));
        assert_eq!((b.seq, b.len, b.bytes, b.utf16), (12, 3, 5, 3));
        assert_eq!(b.origin_left, 11);
        assert_eq!(
            &content[b.byte_start as usize..][..b.bytes as usize],
            "b文c".as_bytes()
        );
        assert!(a.can_append(&b));
    }
}
