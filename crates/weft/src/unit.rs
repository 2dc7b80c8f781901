//! [`Unit`], the unit a text position counts, and counting units in
//! UTF-8 text.

use std::fmt;

/// The unit a text position counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Unicode scalar values (Rust `char`s). The default unit of [`crate::Text`].
    Char,
    /// UTF-8 bytes.
    Utf8,
    /// UTF-16 code units (what JavaScript strings index).
    Utf16,
}

impl Unit {
    /// Every unit, in [`Unit::index`] order.
    pub(crate) const ALL: [Unit; 3] = [Unit::Char, Unit::Utf8, Unit::Utf16];

    /// The unit's index in a per-unit array (its place in [`Unit::ALL`]).
    #[inline]
    pub(crate) fn index(self) -> usize {
        match self {
            Unit::Char => 0,
            Unit::Utf8 => 1,
            Unit::Utf16 => 2,
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::Char => "chars",
            Unit::Utf8 => "UTF-8 bytes",
            Unit::Utf16 => "UTF-16 code units",
        })
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

/// Byte length of the first `chars` chars of `text`, if it has that
/// many, and their UTF-16 length.
pub(crate) fn bytes_of_chars(text: &str, chars: u32) -> Option<(usize, u32)> {
    let b = text.as_bytes();
    if b.get(..chars as usize).is_some_and(<[u8]>::is_ascii) {
        return Some((chars as usize, chars));
    }
    let (bytes, utf16) = prefix_units(b, chars);
    let got = char_len(text.get(..bytes as usize)?);
    (got == chars).then_some((bytes as usize, utf16))
}

/// UTF-16 length of a UTF-8 string.
#[inline(always)]
pub(crate) fn utf16_len(s: &str) -> u32 {
    if s.is_ascii() {
        return s.len() as u32;
    }
    utf16_count(s)
}

/// Number of chars in a UTF-8 string.
#[inline(always)]
pub(crate) fn char_len(s: &str) -> u32 {
    if s.is_ascii() {
        return s.len() as u32;
    }
    char_count(s)
}

/// [`utf16_len`] past its ASCII case. Out of line: typing is mostly
/// ASCII, and the call keeps the callers small.
#[inline(never)]
fn utf16_count(s: &str) -> u32 {
    str_indices::utf16::count(s) as u32
}

/// [`char_len`] past its ASCII case (see [`utf16_count`]).
#[inline(never)]
fn char_count(s: &str) -> u32 {
    str_indices::chars::count(s) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

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
