//! Data blocks: building them, checking them, and reading their entries.

use crate::error::{Error, Result};

pub(crate) use crate::varint::{read as read_varint, write as write_varint};

/// A varint that is a length of bytes that must follow within `limit`.
fn read_len(bytes: &[u8], pos: &mut usize, limit: usize) -> Option<usize> {
    let v = read_varint(bytes, pos)?;
    usize::try_from(v).ok().filter(|&n| n <= limit)
}

/// The xxhash32 checksum blocks and the index end with.
pub(crate) fn checksum(bytes: &[u8]) -> u32 {
    xxhash_rust::xxh32::xxh32(bytes, 0)
}

/// Reads a little-endian u32 at `at`.
pub(crate) fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([
        b.first().copied()?,
        *b.get(1)?,
        *b.get(2)?,
        *b.get(3)?,
    ]))
}

/// Builds one data block.
#[derive(Debug, Default)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    count: u32,
    first_key: Vec<u8>,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes so far (without the 8-byte trailer).
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// Appends an entry; `key` must be greater than the previous one.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.count == 0 {
            self.first_key = key.to_vec();
            0
        } else {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        };
        write_varint(&mut self.buf, shared as u64);
        write_varint(&mut self.buf, (key.len() - shared) as u64);
        write_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(key.get(shared..).unwrap_or(&[]));
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.count += 1;
    }

    /// Closes the block: `(first key, last key, bytes with trailer)`.
    pub fn finish(&mut self) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let mut buf = std::mem::take(&mut self.buf);
        buf.extend_from_slice(&self.count.to_le_bytes());
        let sum = checksum(&buf);
        buf.extend_from_slice(&sum.to_le_bytes());
        self.count = 0;
        (
            std::mem::take(&mut self.first_key),
            std::mem::take(&mut self.last_key),
            buf,
        )
    }
}

/// Entries between two [`Restart`]s a lookup may have to walk.
pub(crate) const RESTART_EVERY: u32 = if cfg!(feature = "small-blocks") {
    2
} else {
    16
};

/// A place a lookup can start walking a block from: the byte position of
/// entry `k` (a multiple of [`RESTART_EVERY`], never 0) and the key of
/// entry `k - 1`, which the prefix-compressed entry `k` needs.
#[derive(Debug, Clone)]
pub(crate) struct Restart {
    pub pos: usize,
    pub prev_key: Box<[u8]>,
}

/// What [`validate`] learned of a block.
pub(crate) struct Validated {
    pub last_key: Vec<u8>,
    pub restarts: Vec<Restart>,
}

/// Checks data block `block` (which starts at byte `offset` of its table):
/// its checksum (when `check`), its structure, that its first key is
/// `first_key` and that its keys increase and follow `prev_last`. Returns
/// its last key and restart points every [`RESTART_EVERY`] entries (the
/// walk is done anyway; they make a lookup O(log n + RESTART_EVERY)
/// instead of a scan of the block).
pub(crate) fn validate(
    block: &[u8],
    offset: u64,
    check: bool,
    first_key: &[u8],
    prev_last: Option<&[u8]>,
) -> Result<Validated> {
    let invalid = Error::InvalidBlock { offset };
    let body_len = block.len().checked_sub(8).ok_or(invalid.clone())?;
    if check {
        let expected = u32_at(block, body_len + 4).ok_or(invalid.clone())?;
        let actual = checksum(block.get(..body_len + 4).ok_or(invalid.clone())?);
        if expected != actual {
            return Err(Error::ChecksumMismatch { expected, actual });
        }
    }
    let count = u32_at(block, body_len).ok_or(invalid.clone())?;
    let entries = block.get(..body_len).ok_or(invalid.clone())?;
    let mut seen = 0u32;
    let mut key: Vec<u8> = Vec::new();
    let mut it = Entries::new(entries);
    let mut restarts = Vec::new();
    while it.pos < entries.len() {
        if seen > 0 && seen.is_multiple_of(RESTART_EVERY) {
            restarts.push(Restart {
                pos: it.pos,
                prev_key: key.as_slice().into(),
            });
        }
        let (_, order) = it.next_ordered(&mut key).ok_or(invalid.clone())?;
        let in_order = if seen == 0 {
            key == first_key && prev_last.is_none_or(|p| p < key.as_slice())
        } else {
            order == std::cmp::Ordering::Greater
        };
        if !in_order {
            return Err(invalid);
        }
        seen = seen.checked_add(1).ok_or(invalid.clone())?;
    }
    if seen == 0 || seen != count {
        return Err(invalid);
    }
    Ok(Validated {
        last_key: key,
        restarts,
    })
}

/// Walks the entries of a block's entry region (without its trailer).
pub(crate) struct Entries<'a> {
    bytes: &'a [u8],
    pos: usize,
    first: bool,
}

impl<'a> Entries<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Entries {
            bytes,
            pos: 0,
            first: true,
        }
    }

    /// Entries from a [`Restart`] on: the caller's key buffer must hold
    /// the restart's `prev_key`.
    pub fn from_restart(bytes: &'a [u8], pos: usize) -> Self {
        Entries {
            bytes,
            pos,
            first: false,
        }
    }

    /// Reads the next entry, turning `key` (the previous key) into its key;
    /// returns its value, or `None` at the end or on a malformed entry.
    pub fn next_into(&mut self, key: &mut Vec<u8>) -> Option<&'a [u8]> {
        self.next_ordered(key).map(|(v, _)| v)
    }

    /// As [`Entries::next_into`], also comparing the new key with the
    /// previous one (without copying either).
    pub fn next_ordered(&mut self, key: &mut Vec<u8>) -> Option<(&'a [u8], std::cmp::Ordering)> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let rest = self.bytes.len();
        let shared = read_len(self.bytes, &mut self.pos, key.len())?;
        if self.first && shared != 0 {
            return None;
        }
        self.first = false;
        let unshared = read_len(self.bytes, &mut self.pos, rest)?;
        let value_len = read_len(self.bytes, &mut self.pos, rest)?;
        let key_end = self.pos.checked_add(unshared)?;
        let value_end = key_end.checked_add(value_len)?;
        let suffix = self.bytes.get(self.pos..key_end)?;
        let value = self.bytes.get(key_end..value_end)?;
        // The first `shared` bytes are equal: the rest decides.
        let order = suffix.cmp(key.get(shared..).unwrap_or(&[]));
        key.truncate(shared);
        key.extend_from_slice(suffix);
        self.pos = value_end;
        Some((value, order))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn a_block_reads_back() {
        let mut b = BlockBuilder::default();
        b.add(b"apple", b"1");
        b.add(b"apricot", b"22");
        b.add(b"banana", b"");
        let (first, last, bytes) = b.finish();
        assert_eq!(
            (first.as_slice(), last.as_slice()),
            (&b"apple"[..], &b"banana"[..])
        );
        assert_eq!(
            validate(&bytes, 0, true, b"apple", None).unwrap().last_key,
            b"banana"
        );
        let mut it = Entries::new(&bytes[..bytes.len() - 8]);
        let mut key = Vec::new();
        let mut got = Vec::new();
        while let Some(v) = it.next_into(&mut key) {
            got.push((key.clone(), v.to_vec()));
        }
        assert_eq!(got[1], (b"apricot".to_vec(), b"22".to_vec()));
        assert!(validate(&bytes, 0, true, b"apple", Some(b"banana")).is_err());
    }

    #[test]
    fn varints_reject_overflow() {
        let mut pos = 0;
        assert_eq!(read_varint(&[0xFF; 10], &mut pos), None);
        let mut out = Vec::new();
        write_varint(&mut out, u64::MAX);
        let mut pos = 0;
        assert_eq!(read_varint(&out, &mut pos), Some(u64::MAX));
    }
}
