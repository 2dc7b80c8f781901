//! Little byte-level helpers: LEB128 varints and a bounds-checked reader.

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};

/// Maps a signed value to an unsigned one, small magnitudes to small
/// numbers (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...), for varints.
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Reverses [`zigzag`].
pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// The peer at `index` of a peer table read from the input.
pub(crate) fn peer_at(
    r: &Reader<'_>,
    peers: &[crate::id::PeerId],
    index: u64,
) -> Result<crate::id::PeerId> {
    usize::try_from(index)
        .ok()
        .and_then(|i| peers.get(i))
        .copied()
        .ok_or_else(|| r.malformed("peer index"))
}

/// Appends `v` as an unsigned LEB128 varint (weft-kv's, the one
/// implementation of every format).
pub(crate) use weft_kv::varint::write as write_varint;

/// Appends `bytes` prefixed by their length.
pub(crate) fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Closes a small framed message (a cursor, a version, presence state):
/// appends the low 32 bits of the xxh3-64 of everything before, little-endian.
pub(crate) fn write_checksum(out: &mut Vec<u8>) {
    let sum = xxh3_64(out) as u32;
    out.extend_from_slice(&sum.to_le_bytes());
}

/// Opens a small framed message written as `magic`, `version`, body, then
/// [`write_checksum`]: checks the magic byte, the checksum and the version,
/// and returns a reader over the body (offsets count from the magic byte).
///
/// # Errors
///
/// [`Error::UnexpectedEof`] for empty or too short input, [`Error::BadMagic`],
/// [`Error::ChecksumMismatch`], [`Error::UnsupportedVersion`].
pub(crate) fn open_framed(bytes: &[u8], magic: u8, version: u8) -> Result<Reader<'_>> {
    match bytes.first() {
        None => return Err(Error::EmptyInput),
        Some(&m) if m == magic => {}
        Some(_) => return Err(Error::BadMagic),
    }
    let body_len = bytes.len().checked_sub(4).ok_or(Error::UnexpectedEof)?;
    let (body, sum) = bytes.split_at(body_len);
    let expected = u32::from_le_bytes(sum.try_into().map_err(|_| Error::UnexpectedEof)?);
    let actual = xxh3_64(body) as u32;
    if actual != expected {
        return Err(Error::ChecksumMismatch {
            expected: u64::from(expected),
            actual: u64::from(actual),
        });
    }
    let mut r = Reader::new(body, 0);
    r.u8()?;
    let found = r.u8()?;
    if found != version {
        return Err(Error::UnsupportedVersion(found));
    }
    Ok(r)
}

/// Reads from a byte slice; every read is bounds-checked and reports the
/// body offset of a failure.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Offset of `bytes[0]` in the body, for error messages.
    base: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], base: usize) -> Self {
        Reader {
            bytes,
            pos: 0,
            base,
        }
    }

    /// Body offset of the next byte.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn malformed(&self, what: &'static str) -> Error {
        Error::Malformed {
            offset: self.offset(),
            what,
        }
    }

    pub fn u8(&mut self) -> Result<u8> {
        let b = *self.bytes.get(self.pos).ok_or(Error::UnexpectedEof)?;
        self.pos += 1;
        Ok(b)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or(Error::UnexpectedEof)?;
        let s = self.bytes.get(self.pos..end).ok_or(Error::UnexpectedEof)?;
        self.pos = end;
        Ok(s)
    }

    pub fn u16_le(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        let mut a = [0u8; 2];
        a.copy_from_slice(b);
        Ok(u16::from_le_bytes(a))
    }

    pub fn u64_le(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    #[inline]
    pub fn varint(&mut self) -> Result<u64> {
        // Most varints are one byte.
        if let Some(&b) = self.bytes.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        self.varint_long()
    }

    /// [`Reader::varint`] past its one-byte case.
    #[inline(never)]
    fn varint_long(&mut self) -> Result<u64> {
        let mut pos = self.pos;
        match weft_kv::varint::read(self.bytes, &mut pos) {
            Some(v) => {
                self.pos = pos;
                Ok(v)
            }
            // The bytes ended while the varint said more follows.
            None if pos == self.bytes.len()
                && (pos == self.pos || self.bytes.get(pos - 1).is_some_and(|b| b & 0x80 != 0)) =>
            {
                Err(Error::UnexpectedEof)
            }
            None => Err(self.malformed("varint")),
        }
    }

    /// A varint that must fit a `u32`.
    pub fn u32(&mut self, what: &'static str) -> Result<u32> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| self.malformed(what))
    }

    /// A count of items that each take at least one byte of what is left,
    /// so a corrupt count cannot make the caller allocate more than the
    /// input justifies.
    pub fn count(&mut self, what: &'static str) -> Result<usize> {
        let v = self.varint()?;
        match usize::try_from(v) {
            Ok(n) if n <= self.remaining() => Ok(n),
            _ => Err(self.malformed(what)),
        }
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| Error::UnexpectedEof)?;
        self.take(n)
    }

    /// A length-prefixed section, as its own reader.
    pub fn section(&mut self) -> Result<Reader<'a>> {
        let bytes = self.bytes()?;
        Ok(Reader::new(bytes, self.offset() - bytes.len()))
    }
}

/// Most items a decoder reserves room for ahead of reading them.
const MAX_RESERVED: usize = 1024;

/// The capacity to reserve for `n` items a decoder was told are coming
/// (`n` from [`Reader::count`]): at most [`MAX_RESERVED`], so that memory
/// follows the items actually read, not what the input claims. (A count
/// is bounded by the bytes left, but values nest: each level reserving
/// for all the bytes left made a 1 MB value reserve 1 GB.)
pub(crate) fn bounded_capacity(n: usize) -> usize {
    n.min(MAX_RESERVED)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests unwrap what must succeed")]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips() {
        for v in [0i64, 1, -1, 1 << 40, -(1 << 40), i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn varints_round_trip() {
        let values = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let mut out = Vec::new();
        for v in values {
            write_varint(&mut out, v);
        }
        let mut r = Reader::new(&out, 0);
        for v in values {
            assert_eq!(r.varint().unwrap(), v);
        }
        assert!(r.is_empty());
    }

    #[test]
    fn overlong_and_truncated_varints_are_errors() {
        let mut r = Reader::new(&[0xFF; 11], 0);
        assert!(matches!(r.varint(), Err(Error::Malformed { .. })));
        let mut r = Reader::new(&[0x80], 0);
        assert_eq!(r.varint(), Err(Error::UnexpectedEof));
        let mut r = Reader::new(
            &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02],
            0,
        );
        assert!(matches!(r.varint(), Err(Error::Malformed { .. })));
    }

    #[test]
    fn counts_are_bounded_by_the_input() {
        let mut out = Vec::new();
        write_varint(&mut out, 1 << 40);
        let mut r = Reader::new(&out, 0);
        assert!(matches!(r.count("n"), Err(Error::Malformed { .. })));
    }
}
