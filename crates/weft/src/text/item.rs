//! [`Item`]: a run of chars typed in sequence by one peer, the list element of
//! the sequence CRDT.

use crate::id::{MarkIdx, Seq};
use crate::oplog::{AnchorOp, NO_CONTENT};
use crate::style::ExpandType;

use super::chunk::Cache;

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
    pub fn counts(&self) -> Cache {
        if self.deleted {
            Cache {
                anchors: u32::from(self.anchor != 0),
                ..Cache::default()
            }
        } else {
            Cache {
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

/// UTF-8 bytes and UTF-16 units of the first `chars` chars of `text`.
/// Out of line: callers take an ASCII shortcut first, and inlining this
/// loop into them costs plain ASCII typing (B4) about 1.4% in
/// instructions.
#[inline(never)]
pub(crate) fn prefix_units(text: &[u8], chars: u32) -> (u32, u32) {
    let mut seen = 0u32;
    let mut utf16 = 0u32;
    // Eight bytes at a time while the char sought starts after them: the
    // chars starting in a word are its bytes that are not continuation
    // bytes (0b10xxxxxx), and each of those that leads four bytes
    // (0b11110xxx) is two UTF-16 units.
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = text.chunks_exact(8);
    let mut i = 0usize;
    for word in words.by_ref() {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let w = u64::from_le_bytes(bytes);
        let continuation = (w & !(w << 1) & HIGH).count_ones();
        let starts = 8 - continuation;
        if seen + starts > chars {
            break;
        }
        let four = (w & (w << 1) & (w << 2) & (w << 3) & HIGH).count_ones();
        seen += starts;
        utf16 += starts + four;
        i += 8;
    }
    for (k, &b) in text.get(i..).unwrap_or_default().iter().enumerate() {
        let i = i + k;
        if b & 0xC0 != 0x80 {
            if seen == chars {
                return (i as u32, utf16);
            }
            seen += 1;
            utf16 += if b >= 0xF0 { 2 } else { 1 };
        }
    }
    (text.len() as u32, utf16)
}

/// UTF-16 length of a UTF-8 string.
pub(crate) fn utf16_len(s: &str) -> u32 {
    if s.is_ascii() {
        return s.len() as u32;
    }
    s.as_bytes()
        .iter()
        .map(|&b| u32::from(b & 0xC0 != 0x80) + u32::from(b >= 0xF0))
        .sum()
}

/// Number of chars in a UTF-8 string.
pub(crate) fn char_len(s: &str) -> u32 {
    if s.is_ascii() {
        return s.len() as u32;
    }
    s.as_bytes().iter().filter(|&&b| b & 0xC0 != 0x80).count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::NO_SEQ;

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

    #[test]
    fn unit_counts() {
        assert_eq!(utf16_len("a😀b文"), 5);
        assert_eq!(char_len("a😀b文"), 4);
        assert_eq!(prefix_units("a😀b".as_bytes(), 2), (5, 3));
        assert_eq!(prefix_units("ab".as_bytes(), 5), (2, 2));
    }

    /// The word-at-a-time count agrees with counting char by char, at
    /// every prefix of mixed texts.
    #[test]
    fn prefix_units_match_a_char_by_char_count() {
        let pieces = ["a", "é", "文", "😀", "\u{FFFC}", "xyzw", "\n"];
        let mut seed = 7u64;
        for _ in 0..300 {
            let mut s = String::new();
            for _ in 0..(seed % 40) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            for n in 0..=s.chars().count() as u32 + 1 {
                let bytes: usize = s.chars().take(n as usize).map(char::len_utf8).sum();
                let utf16: usize = s.chars().take(n as usize).map(char::len_utf16).sum();
                assert_eq!(
                    prefix_units(s.as_bytes(), n),
                    (bytes as u32, utf16 as u32),
                    "{s:?} {n}"
                );
            }
        }
    }
}
