//! Whole tables: [`TableWriter`] builds one, [`Table`] is a checked one.

use std::ops::Range;
use std::sync::Arc;

use crate::block::{
    checksum, read_varint, u32_at, validate, write_varint, BlockBuilder, Entries, Restart,
    Validated,
};
use crate::error::{Error, Result};
use crate::{BLOCK_SIZE, FORMAT_VERSION, MAGIC};

const FOOTER_LEN: usize = 20;

/// Builds a table from entries added in strictly increasing key order.
///
/// # Examples
///
/// ```
/// use weft_kv::{MemKvStore, TableWriter};
///
/// let mut w = TableWriter::new();
/// w.add(b"a", b"1")?;
/// w.add(b"b", b"2")?;
/// assert!(w.add(b"a", b"3").is_err()); // out of order
/// let table = w.finish();
/// let mut store = MemKvStore::new();
/// store.import_all(&table)?;
/// assert_eq!(store.get(b"b"), Some(&b"2"[..]));
/// # Ok::<(), weft_kv::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct TableWriter {
    out: Vec<u8>,
    block: BlockBuilder,
    /// Per written block: first key, offset, length.
    index: Vec<(Vec<u8>, u64, u64)>,
    last_key: Option<Vec<u8>>,
}

impl TableWriter {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry. Keys must be strictly increasing.
    ///
    /// # Errors
    ///
    /// [`Error::UnsortedKey`] when `key` is not greater than the previous
    /// key; nothing is added then.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.last_key.as_deref().is_some_and(|last| last >= key) {
            return Err(Error::UnsortedKey);
        }
        let entry = key.len() + value.len() + 12;
        if !self.block.is_empty() && self.block.size() + entry > BLOCK_SIZE {
            self.flush();
        }
        self.block.add(key, value);
        self.last_key = Some(key.to_vec());
        if self.block.size() >= BLOCK_SIZE {
            self.flush();
        }
        Ok(())
    }

    /// Closes the current block, if any.
    fn flush(&mut self) {
        if self.block.is_empty() {
            return;
        }
        let (first, _, bytes) = self.block.finish();
        self.index
            .push((first, self.out.len() as u64, bytes.len() as u64));
        self.out.extend_from_slice(&bytes);
    }

    /// Appends an already encoded, checked block whose keys all follow the
    /// keys added so far.
    pub(crate) fn add_block(&mut self, first_key: &[u8], last_key: &[u8], bytes: &[u8]) {
        self.flush();
        self.index.push((
            first_key.to_vec(),
            self.out.len() as u64,
            bytes.len() as u64,
        ));
        self.out.extend_from_slice(bytes);
        self.last_key = Some(last_key.to_vec());
    }

    /// The finished table.
    pub fn finish(mut self) -> Vec<u8> {
        self.flush();
        let index_offset = self.out.len() as u64;
        let mut index = Vec::new();
        write_varint(&mut index, self.index.len() as u64);
        for (key, offset, len) in &self.index {
            write_varint(&mut index, key.len() as u64);
            index.extend_from_slice(key);
            write_varint(&mut index, *offset);
            write_varint(&mut index, *len);
        }
        let sum = checksum(&index);
        index.extend_from_slice(&sum.to_le_bytes());
        let index_len = index.len() as u32;
        self.out.extend_from_slice(&index);
        self.out.extend_from_slice(&index_offset.to_le_bytes());
        self.out.extend_from_slice(&index_len.to_le_bytes());
        self.out.push(FORMAT_VERSION);
        self.out.extend_from_slice(&[0, 0, 0]);
        self.out.extend_from_slice(&MAGIC);
        self.out
    }
}

/// One data block of a checked table.
#[derive(Debug, Clone)]
pub(crate) struct BlockMeta {
    pub first_key: Vec<u8>,
    pub last_key: Vec<u8>,
    /// Where lookups may start walking (see [`Restart`]).
    pub restarts: Vec<Restart>,
    /// Byte range in the table, trailer included.
    pub range: Range<usize>,
}

/// A table that passed [`Table::parse`]: every block is readable.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub bytes: Arc<[u8]>,
    pub blocks: Vec<BlockMeta>,
    /// Whether the block checksums were verified on import.
    pub checked: bool,
}

impl Table {
    /// Checks `bytes` as a table (checksums only when `check`).
    pub fn parse(bytes: &[u8], check: bool) -> Result<Table> {
        let footer_at = bytes
            .len()
            .checked_sub(FOOTER_LEN)
            .ok_or(Error::UnexpectedEof)?;
        let footer = bytes.get(footer_at..).ok_or(Error::UnexpectedEof)?;
        if footer.get(16..20) != Some(&MAGIC[..]) {
            return Err(Error::BadMagic);
        }
        let version = footer.get(12).copied().ok_or(Error::UnexpectedEof)?;
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        let bad_footer = Error::InvalidBlock {
            offset: footer_at as u64,
        };
        if footer.get(13..16) != Some(&[0, 0, 0][..]) {
            return Err(bad_footer);
        }
        let lo = u32_at(footer, 0).ok_or(Error::UnexpectedEof)?;
        let hi = u32_at(footer, 4).ok_or(Error::UnexpectedEof)?;
        let index_offset = u64::from(lo) | (u64::from(hi) << 32);
        let index_len = u32_at(footer, 8).ok_or(Error::UnexpectedEof)?;
        // The index ends right where the footer starts.
        if index_offset.checked_add(u64::from(index_len)) != Some(footer_at as u64) {
            return Err(bad_footer);
        }
        let index_at = footer_at - index_len as usize;
        let bad_index = Error::InvalidBlock {
            offset: index_at as u64,
        };
        let index = bytes.get(index_at..footer_at).ok_or(bad_index.clone())?;
        let index_body = index.len().checked_sub(4).ok_or(bad_index.clone())?;
        if check {
            let expected = u32_at(index, index_body).ok_or(bad_index.clone())?;
            let actual = checksum(index.get(..index_body).ok_or(bad_index.clone())?);
            if expected != actual {
                return Err(Error::ChecksumMismatch { expected, actual });
            }
        }
        let index = index.get(..index_body).ok_or(bad_index.clone())?;
        let mut pos = 0;
        let count = read_varint(index, &mut pos)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= index.len())
            .ok_or(bad_index.clone())?;
        let mut blocks: Vec<BlockMeta> = Vec::with_capacity(count);
        let mut next_offset = 0usize;
        for _ in 0..count {
            let key_len = read_varint(index, &mut pos)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or(bad_index.clone())?;
            let key_end = pos.checked_add(key_len).ok_or(bad_index.clone())?;
            let first_key = index.get(pos..key_end).ok_or(bad_index.clone())?.to_vec();
            pos = key_end;
            let offset = read_varint(index, &mut pos).ok_or(bad_index.clone())?;
            let len = read_varint(index, &mut pos).ok_or(bad_index.clone())?;
            // Blocks are contiguous from 0 and end where the index starts.
            if offset != next_offset as u64 {
                return Err(bad_index);
            }
            let end = offset
                .checked_add(len)
                .and_then(|e| usize::try_from(e).ok())
                .filter(|&e| e <= index_at)
                .ok_or(bad_index.clone())?;
            let block = bytes.get(next_offset..end).ok_or(bad_index.clone())?;
            let prev_last = blocks.last().map(|b| b.last_key.as_slice());
            let Validated { last_key, restarts } =
                validate(block, offset, check, &first_key, prev_last)?;
            blocks.push(BlockMeta {
                first_key,
                last_key,
                restarts,
                range: next_offset..end,
            });
            next_offset = end;
        }
        if pos != index.len() || next_offset != index_at {
            return Err(bad_index);
        }
        Ok(Table {
            bytes: Arc::from(bytes),
            blocks,
            checked: check,
        })
    }

    /// The bytes of block `i` (trailer included) if they can be copied into
    /// a new table as they are: always for a checked table; for one
    /// imported unchecked, only when the block's checksum holds, so an
    /// export never writes a block that fails its own checksum.
    pub fn reusable_block(&self, i: usize) -> Option<&[u8]> {
        let bytes = self.bytes.get(self.blocks.get(i)?.range.clone())?;
        if self.checked {
            return Some(bytes);
        }
        let body = bytes.len().checked_sub(4)?;
        let stored = u32_at(bytes, body)?;
        (checksum(bytes.get(..body)?) == stored).then_some(bytes)
    }

    /// The entries of block `i`, in order (keys rebuilt).
    pub fn block_entries(&self, i: usize) -> BlockIter<'_> {
        let bytes = self
            .blocks
            .get(i)
            .and_then(|b| self.bytes.get(b.range.start..b.range.end.saturating_sub(8)))
            .unwrap_or(&[]);
        BlockIter {
            entries: Entries::new(bytes),
            key: Vec::new(),
        }
    }

    /// Index of the block that would hold `key`, if any.
    pub fn block_for(&self, key: &[u8]) -> Option<usize> {
        self.blocks
            .partition_point(|b| b.first_key.as_slice() <= key)
            .checked_sub(1)
    }

    /// The value of `key` in this table. O(log n): a binary search over
    /// the blocks and over the block's restart points, then a walk of at
    /// most `RESTART_EVERY` (16) entries.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let i = self.block_for(key)?;
        let meta = self.blocks.get(i)?;
        if meta.last_key.as_slice() < key {
            return None;
        }
        let bytes = self
            .bytes
            .get(meta.range.start..meta.range.end.saturating_sub(8))
            .unwrap_or(&[]);
        // The last restart whose previous key is below `key`: the key, if
        // present, is its entry or a later one.
        let r = meta
            .restarts
            .partition_point(|r| &*r.prev_key < key)
            .checked_sub(1)
            .and_then(|r| meta.restarts.get(r));
        let mut it = match r {
            Some(r) => BlockIter {
                entries: Entries::from_restart(bytes, r.pos),
                key: r.prev_key.to_vec(),
            },
            None => BlockIter {
                entries: Entries::new(bytes),
                key: Vec::new(),
            },
        };
        while let Some((k, v)) = it.next_ref() {
            match k.cmp(key) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => return Some(v),
                std::cmp::Ordering::Greater => return None,
            }
        }
        None
    }
}

/// The entries of one block of a checked table.
pub(crate) struct BlockIter<'a> {
    entries: Entries<'a>,
    key: Vec<u8>,
}

impl<'a> BlockIter<'a> {
    /// The next entry, its key borrowed until the next call.
    pub fn next_ref(&mut self) -> Option<(&[u8], &'a [u8])> {
        let value = self.entries.next_into(&mut self.key)?;
        Some((&self.key, value))
    }
}
