//! Compressed values (docs/FORMAT.md 3.1): the content of an update and
//! most snapshot values, stored as they are or compressed with LZ4 or
//! raw deflate.
//!
//! Since snapshot version 6 and update version 5 a compressed value
//! names its codec in its first byte ([`Framing::Tagged`]), so a writer
//! may pick the codec per value and a reader never guesses. Older
//! versions left the codec to the reader, who knew it from the mode, the
//! version and the key ([`Framing::Implied`]). Writers write only the
//! tagged form; readers read both.
//!
//! Every read is bounded: a value may expand at most a small multiple of
//! its size (see [`MAX_RATIO`]), an LZ4 block that claims much more than
//! its size has its tokens walked before anything is allocated, and
//! deflate output grows only as it decodes.

use std::borrow::Cow;

use crate::bytes::{write_varint, Reader};
use crate::error::{Error, Result};

/// The most an LZ4 value may expand: a declared size above
/// `compressed * MAX_RATIO + 64` is malformed, and nothing is allocated
/// for it. Writers store a value raw rather than exceed it (real text
/// compresses 2-4x: only a text of one repeated pattern would), so what
/// a hostile snapshot can make a reader decompress before it fails is a
/// small multiple of its size (the codec itself allows 255x).
pub(super) const MAX_RATIO: usize = 16;
/// [`MAX_RATIO`] for deflate, whose values (a shallow snapshot's deleted
/// text and segments, history columns) are parsed into larger
/// structures (the codec itself allows 1,032x).
const MAX_RATIO_DEFLATE: usize = 8;
/// The most a segments value may expand, whatever its codec: each
/// segment (two bytes or more) becomes a segment and an item of a text's
/// tree, about 30 times its bytes, so more would let a failed load
/// allocate far more than its input.
pub(super) const MAX_RATIO_SEGMENTS: usize = 2;
/// An LZ4 value that claims to expand more than this is walked (its
/// tokens only) to check that it does before its output is allocated.
const CHECKED_RATIO: usize = 8;
/// Deflate level (miniz's default: level 9 saves under 1% on texts and
/// takes twice as long).
const DEFLATE_LEVEL: u8 = 6;

/// The first byte of a stored value, in both framings.
const TAG_STORED: u8 = 0;
/// The first byte of a tagged LZ4 value.
const TAG_LZ4: u8 = 1;
/// The first byte of a tagged deflate value.
const TAG_DEFLATE: u8 = 2;

/// A compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Codec {
    /// One LZ4 block (no frame, no checksum of its own), as
    /// `lz4_flex::block` reads and writes it: fast to read.
    Lz4,
    /// One raw deflate stream (RFC 1951: no zlib or gzip header): small.
    Deflate,
}

impl Codec {
    /// The most a value of this codec may expand (see [`MAX_RATIO`]).
    fn max_ratio(self) -> usize {
        match self {
            Codec::Lz4 => MAX_RATIO,
            Codec::Deflate => MAX_RATIO_DEFLATE,
        }
    }

    fn tag(self) -> u8 {
        match self {
            Codec::Lz4 => TAG_LZ4,
            Codec::Deflate => TAG_DEFLATE,
        }
    }
}

/// How the values of one format version say which codec compressed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// Before snapshot version 6 and update version 5: `00` then the raw
    /// bytes, or the varint decompressed length (at least 1) then the
    /// compressed bytes of the codec the reader knows from the mode, the
    /// version and the key.
    Implied(Codec),
    /// Snapshot version 6 and update version 5 on: `00` then the raw
    /// bytes, or the codec's tag (`01` LZ4, `02` deflate), the varint
    /// decompressed length (at least 1), then its compressed bytes.
    Tagged,
}

impl Framing {
    /// The framing of a snapshot value in format `version`, whose codec
    /// before version 6 was `implied`.
    pub(super) fn snapshot(version: u8, implied: Codec) -> Framing {
        if version >= 6 {
            Framing::Tagged
        } else {
            Framing::Implied(implied)
        }
    }
}

/// `raw` as a value stored as it is: a 0 byte, then the bytes. For data
/// LZ4 does not shrink (varint streams): storing it costs nothing to
/// encode and is read in place.
pub(super) fn stored(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 1);
    out.push(TAG_STORED);
    out.extend_from_slice(raw);
    out
}

/// `raw` as a tagged value compressed by `codec` (or stored when that is
/// not smaller).
pub(super) fn pack(raw: &[u8], codec: Codec) -> Vec<u8> {
    pack_at_most(raw, codec, codec.max_ratio())
}

/// [`pack`], stored raw if it would expand more than `max_ratio`.
pub(super) fn pack_at_most(raw: &[u8], codec: Codec, max_ratio: usize) -> Vec<u8> {
    if raw.is_empty() {
        return stored(raw);
    }
    let packed = match codec {
        Codec::Lz4 => lz4_flex::block::compress(raw),
        Codec::Deflate => miniz_oxide::deflate::compress_to_vec(raw, DEFLATE_LEVEL),
    };
    framed(raw, codec, packed, max_ratio)
}

/// `raw` as a tagged value, given its bytes `packed` compressed by
/// `codec`: stored when that is not smaller, or expands more than
/// `max_ratio` (what readers take, see [`MAX_RATIO`]).
pub(super) fn framed(raw: &[u8], codec: Codec, packed: Vec<u8>, max_ratio: usize) -> Vec<u8> {
    let too_dense = raw.len() > packed.len().saturating_mul(max_ratio) + 64;
    if raw.is_empty() || packed.len() + 6 >= raw.len() || too_dense {
        return stored(raw);
    }
    let mut out = Vec::with_capacity(packed.len() + 6);
    out.push(codec.tag());
    write_varint(&mut out, raw.len() as u64);
    out.extend_from_slice(&packed);
    out
}

/// Whether `value` (from [`pack`]) holds compressed bytes rather than
/// its raw bytes as they are.
pub(super) fn is_compressed(value: &[u8]) -> bool {
    value.first().is_some_and(|&b| b != TAG_STORED)
}

/// Reverses [`pack`]: `value` in `framing`, which may expand as far as
/// its codec allows (see [`MAX_RATIO`]); `what` names it in errors.
pub(super) fn unpack<'a>(
    value: &'a [u8],
    what: &'static str,
    framing: Framing,
) -> Result<Cow<'a, [u8]>> {
    unpack_with(value, what, framing, 0, None)
}

/// [`unpack`], where a decompressed value gets capacity for `room` more
/// bytes and may expand at most `max_ratio` times if given (else as far
/// as its codec allows).
pub(super) fn unpack_with<'a>(
    value: &'a [u8],
    what: &'static str,
    framing: Framing,
    room: usize,
    max_ratio: Option<usize>,
) -> Result<Cow<'a, [u8]>> {
    let mut r = Reader::new(value, 0);
    // Offsets count from the value's first byte: the tag, the length, or
    // the compressed bytes, whichever is at fault.
    let at = |offset| Error::Malformed { offset, what };
    let codec = match framing {
        Framing::Implied(codec) => codec,
        Framing::Tagged => match r.u8()? {
            TAG_STORED => return Ok(Cow::Borrowed(r.take(r.remaining())?)),
            TAG_LZ4 => Codec::Lz4,
            TAG_DEFLATE => Codec::Deflate,
            _ => return Err(at(0)),
        },
    };
    let len_at = r.offset();
    let len = usize::try_from(r.varint()?).map_err(|_| at(len_at))?;
    let packed_at = r.offset();
    let packed = r.take(r.remaining())?;
    if len == 0 {
        return match framing {
            Framing::Implied(_) => Ok(Cow::Borrowed(packed)),
            // A tagged value of nothing is stored.
            Framing::Tagged => Err(at(len_at)),
        };
    }
    let max_ratio = max_ratio.unwrap_or(codec.max_ratio());
    if len > packed.len().saturating_mul(max_ratio).saturating_add(64) {
        return Err(at(len_at));
    }
    // Room to grow, for a text: never more than the text (its size in the
    // meta, which the caller's room follows, is checked only after).
    let room = room.min(len);
    // Memory follows what the stream really holds, not what the value
    // claims: an LZ4 value that claims more than `CHECKED_RATIO` times its
    // size has its length checked before anything is allocated (text
    // compresses far less: reading it pays no second pass), deflate's
    // output grows as it decodes (up to `len`).
    let out = match codec {
        Codec::Lz4 => {
            let claims_much = len > packed.len().saturating_mul(CHECKED_RATIO);
            if claims_much && lz4_output_len(packed, len) != Some(len) {
                return Err(at(packed_at));
            }
            // Zeroed by the allocator, which is often free (fresh pages),
            // unlike zeroing only `len` bytes of a bigger buffer.
            let mut out = vec![0u8; len.saturating_add(room)];
            match lz4_flex::block::decompress_into(packed, &mut out) {
                Ok(n) if n == len => out.truncate(len),
                _ => return Err(at(packed_at)),
            }
            out
        }
        Codec::Deflate => match miniz_oxide::inflate::decompress_to_vec_with_limit(packed, len) {
            Ok(mut out) if out.len() == len => {
                out.reserve_exact(room);
                out
            }
            _ => return Err(at(packed_at)),
        },
    };
    Ok(Cow::Owned(out))
}

/// The length of what LZ4 block `packed` decompresses to, if it is a
/// well-formed block of at most `limit` bytes (every match within the
/// output so far); reads only its tokens. O(tokens).
fn lz4_output_len(packed: &[u8], limit: usize) -> Option<usize> {
    let mut r = Reader::new(packed, 0);
    // A length nibble of 15 continues in bytes until one is not 255.
    let extended = |r: &mut Reader<'_>, mut n: usize| -> Option<usize> {
        if n == 15 {
            loop {
                let b = r.u8().ok()?;
                n = n.checked_add(usize::from(b))?;
                if b != 255 {
                    break;
                }
            }
        }
        Some(n)
    };
    let mut out = 0usize;
    loop {
        let token = r.u8().ok()?;
        let literals = extended(&mut r, usize::from(token >> 4))?;
        r.take(literals).ok()?;
        out = out.checked_add(literals).filter(|&o| o <= limit)?;
        if r.is_empty() {
            return Some(out);
        }
        let offset = usize::from(r.u16_le().ok()?);
        if offset == 0 || offset > out {
            return None;
        }
        let matched = extended(&mut r, usize::from(token & 15))?.checked_add(4)?;
        out = out.checked_add(matched).filter(|&o| o <= limit)?;
    }
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "tests unwrap and index what must be there"
)]
mod tests {
    use super::*;

    /// The token walk agrees with the decompressor on real blocks, and
    /// refuses blocks that claim more, or less, or point before the start.
    #[test]
    fn lz4_walk_finds_the_length_of_what_a_block_produces() {
        let inputs: Vec<Vec<u8>> = vec![
            b"a".to_vec(),
            vec![b'a'; 100_000],
            (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect(),
            "Hello wörld 😀 ".repeat(3_000).into_bytes(),
        ];
        for raw in inputs {
            for packed in [
                lz4_flex::block::compress(&raw),
                super::super::lz4hc::compress(&raw),
            ] {
                assert_eq!(lz4_output_len(&packed, raw.len()), Some(raw.len()));
                assert_eq!(lz4_output_len(&packed, raw.len() - 1), None);
                for cut in [1, packed.len() / 2, packed.len() - 1] {
                    let short = lz4_output_len(&packed[..cut], raw.len());
                    assert_ne!(short, Some(raw.len()), "cut at {cut}");
                }
                let mut value = Vec::new();
                write_varint(&mut value, raw.len() as u64 * 2);
                value.extend_from_slice(&packed);
                assert!(unpack(&value, "t", Framing::Implied(Codec::Lz4)).is_err());
                let mut tagged = vec![TAG_LZ4];
                tagged.extend_from_slice(&value);
                assert!(unpack(&tagged, "t", Framing::Tagged).is_err());
            }
        }
        // A match whose offset reaches before the output's start.
        assert_eq!(lz4_output_len(&[0x10, b'x', 2, 0, 0x00], 100), None);
        assert_eq!(lz4_output_len(&[0x10, b'x', 1, 0, 0x00], 100), Some(5));
    }

    /// A tagged value names its codec: each codec's values read back
    /// whatever the reader expected before, and a value read with the
    /// other codec's implied framing fails.
    #[test]
    fn tagged_values_name_their_codec() {
        // Words in a varied order: compresses, but less than 8 times.
        let words = [
            "best", "of", "times", "it", "was", "the", "worst", "age", "wisdom",
        ];
        let mut x = 1u32;
        let prose: String = (0..2_000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                words[(x >> 16) as usize % words.len()]
            })
            .collect::<Vec<_>>()
            .join(" ");
        for codec in [Codec::Lz4, Codec::Deflate] {
            let value = pack(prose.as_bytes(), codec);
            assert_eq!(value[0], codec.tag());
            assert_eq!(
                unpack(&value, "t", Framing::Tagged).unwrap(),
                prose.as_bytes()
            );
            let other = match codec {
                Codec::Lz4 => Codec::Deflate,
                Codec::Deflate => Codec::Lz4,
            };
            assert!(unpack(&value[1..], "t", Framing::Implied(other)).is_err());
            assert_eq!(
                unpack(&value[1..], "t", Framing::Implied(codec)).unwrap(),
                prose.as_bytes()
            );
        }
        // Stored values read the same in both framings.
        let value = pack(b"abc", Codec::Lz4);
        assert_eq!(value, [0, b'a', b'b', b'c']);
        for framing in [Framing::Tagged, Framing::Implied(Codec::Deflate)] {
            assert_eq!(unpack(&value, "t", framing).unwrap(), &b"abc"[..]);
        }
    }

    /// Tags without a codec, a tagged length of 0, and a tag with
    /// nothing after it are malformed; no value at all is cut short.
    #[test]
    fn tagged_values_refuse_what_no_writer_writes() {
        for bad in [&[3u8, 1, b'a'][..], &[255, 1, b'a'], &[1, 0, b'a'], &[2, 0]] {
            assert!(
                matches!(
                    unpack(bad, "t", Framing::Tagged),
                    Err(Error::Malformed { .. })
                ),
                "{bad:?}"
            );
        }
        // Each error names the byte at fault: the tag, the length, or the
        // compressed bytes.
        let offset = |value: &[u8]| match unpack(value, "t", Framing::Tagged) {
            Err(Error::Malformed { offset, .. }) => Some(offset),
            _ => None,
        };
        assert_eq!(offset(&[7, 3, b'a']), Some(0));
        assert_eq!(offset(&[1, 0, b'a']), Some(1));
        assert_eq!(
            offset(&[2, 0xE8, 0x07, 1, 2]),
            Some(1),
            "1,000 from 2 bytes"
        );
        assert_eq!(offset(&[1, 0x05, 0xF0]), Some(2), "an LZ4 block cut short");
        assert_eq!(offset(&[2, 0x05, 0xFF, 0xFF]), Some(2), "not deflate");
        assert!(matches!(
            unpack(&[1], "t", Framing::Tagged),
            Err(Error::UnexpectedEof)
        ));
        assert!(matches!(
            unpack(&[], "t", Framing::Tagged),
            Err(Error::UnexpectedEof)
        ));
    }
}
