//! [`MemKvStore`]: an in-memory memtable over imported tables.

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};

use crate::error::Result;
use crate::table::{Table, TableWriter};

/// A sorted key-value store in memory: edits go to a memtable that
/// overlays zero or more imported tables (later imports win over earlier
/// ones, the memtable over all). [`MemKvStore::export_all`] writes
/// everything as one table.
///
/// Keys and values are byte strings. Reads of imported data borrow the
/// imported bytes; nothing is decoded until it is read.
#[derive(Debug, Clone, Default)]
pub struct MemKvStore {
    tables: Vec<Table>,
    /// `None` marks a removed key.
    mem: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

fn contains(range: &(Bound<&[u8]>, Bound<&[u8]>), key: &[u8]) -> bool {
    (match range.0 {
        Bound::Included(s) => key >= s,
        Bound::Excluded(s) => key > s,
        Bound::Unbounded => true,
    }) && (match range.1 {
        Bound::Included(e) => key <= e,
        Bound::Excluded(e) => key < e,
        Bound::Unbounded => true,
    })
}

impl MemKvStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `key`. O(log n) plus one block scan per table.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        if let Some(v) = self.mem.get(key) {
            return v.as_deref();
        }
        self.tables.iter().rev().find_map(|t| t.get(key))
    }

    /// Sets `key` to `value`.
    pub fn set(&mut self, key: &[u8], value: &[u8]) {
        self.mem.insert(key.to_vec(), Some(value.to_vec()));
    }

    /// Removes `key` (a no-op when absent).
    pub fn remove(&mut self, key: &[u8]) {
        if self.tables.is_empty() {
            self.mem.remove(key);
        } else {
            self.mem.insert(key.to_vec(), None);
        }
    }

    /// The entries with keys in `range`, in key order; reverse it for
    /// descending order. Collects the range first: O(entries in range +
    /// blocks touched).
    pub fn scan<'a, R: RangeBounds<[u8]>>(
        &'a self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = (Vec<u8>, &'a [u8])> + 'a {
        let bounds = (range.start_bound(), range.end_bound());
        let mut merged: BTreeMap<Vec<u8>, Option<&'a [u8]>> = BTreeMap::new();
        for t in &self.tables {
            let first = match bounds.0 {
                Bound::Included(s) | Bound::Excluded(s) => t.block_for(s).unwrap_or(0),
                Bound::Unbounded => 0,
            };
            for i in first..t.blocks.len() {
                let past_end = t.blocks.get(i).is_some_and(|b| match bounds.1 {
                    Bound::Included(e) => b.first_key.as_slice() > e,
                    Bound::Excluded(e) => b.first_key.as_slice() >= e,
                    Bound::Unbounded => false,
                });
                if past_end {
                    break;
                }
                let mut it = t.block_entries(i);
                while let Some((k, v)) = it.next_ref() {
                    if contains(&bounds, k) {
                        merged.insert(k.to_vec(), Some(v));
                    }
                }
            }
        }
        for (k, v) in self.mem.range::<[u8], _>(bounds) {
            merged.insert(k.clone(), v.as_deref());
        }
        merged.into_iter().filter_map(|(k, v)| Some((k, v?)))
    }

    /// Number of keys. O(n): it merges the tables and the memtable.
    pub fn len(&self) -> usize {
        if self.tables.is_empty() {
            return self.mem.values().filter(|v| v.is_some()).count();
        }
        self.scan::<(Bound<&[u8]>, Bound<&[u8]>)>((Bound::Unbounded, Bound::Unbounded))
            .count()
    }

    /// Whether the store has no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Merges the table in `bytes` into the store (it wins over what was
    /// there), after checking its footer, its index and **every** block:
    /// checksums and structure. On error the store is unchanged.
    ///
    /// # Errors
    ///
    /// [`crate::Error`] for truncated, damaged or foreign bytes.
    pub fn import_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.import(bytes, true)
    }

    /// As [`MemKvStore::import_all`] but without verifying the checksums
    /// (the structure is still checked, so reading never fails).
    ///
    /// **Contract**: call it only on bytes whose integrity the caller has
    /// already verified with a checksum covering all of them (Weft does
    /// for snapshots, which carry a document-level checksum). On bytes
    /// that were damaged in a way that keeps the structure valid, this
    /// loads wrong data without noticing.
    ///
    /// # Errors
    ///
    /// [`crate::Error`] for structurally invalid bytes.
    pub fn import_all_unchecked(&mut self, bytes: &[u8]) -> Result<()> {
        self.import(bytes, false)
    }

    fn import(&mut self, bytes: &[u8], check: bool) -> Result<()> {
        let table = Table::parse(bytes, check)?;
        // Memtable edits made before the import are older than it.
        if !self.mem.is_empty() {
            let keys: Vec<Vec<u8>> = self
                .mem
                .keys()
                .filter(|k| table.get(k).is_some())
                .cloned()
                .collect();
            for k in keys {
                self.mem.remove(&k);
            }
        }
        self.tables.push(table);
        Ok(())
    }

    /// Everything as one table. Blocks of a single imported table that no
    /// edit touched are copied as they are, so exporting an untouched
    /// store returns the imported bytes.
    pub fn export_all(&self) -> Vec<u8> {
        let mut w = TableWriter::new();
        match self.tables.as_slice() {
            [] => {
                for (k, v) in &self.mem {
                    if let Some(v) = v {
                        let _ = w.add(k, v);
                    }
                }
            }
            [t] => {
                // Memtable keys go with the block whose key range holds
                // them (block 0 also takes the keys before it).
                let mut edits = self.mem.iter().peekable();
                for (i, b) in t.blocks.iter().enumerate() {
                    let next_first = t.blocks.get(i + 1).map(|n| n.first_key.as_slice());
                    let mut mine: Vec<(&Vec<u8>, &Option<Vec<u8>>)> = Vec::new();
                    while let Some((k, v)) =
                        edits.next_if(|(k, _)| next_first.is_none_or(|n| k.as_slice() < n))
                    {
                        mine.push((k, v));
                    }
                    if mine.is_empty() {
                        if let Some(bytes) = t.reusable_block(i) {
                            w.add_block(&b.first_key, &b.last_key, bytes);
                            continue;
                        }
                    }
                    // Merge this block with its edits.
                    let mut it = t.block_entries(i);
                    let mut mine = mine.into_iter().peekable();
                    let mut entry = it.next_ref().map(|(k, v)| (k.to_vec(), v));
                    loop {
                        let take_edit = match (&entry, mine.peek()) {
                            (None, None) => break,
                            (None, Some(_)) => true,
                            (Some(_), None) => false,
                            (Some((k, _)), Some((ek, _))) => ek.as_slice() <= k.as_slice(),
                        };
                        if take_edit {
                            if let Some((ek, ev)) = mine.next() {
                                if entry.as_ref().is_some_and(|(k, _)| k == ek) {
                                    entry = it.next_ref().map(|(k, v)| (k.to_vec(), v));
                                }
                                if let Some(v) = ev {
                                    let _ = w.add(ek, v);
                                }
                            }
                        } else if let Some((k, v)) = entry.take() {
                            let _ = w.add(&k, v);
                            entry = it.next_ref().map(|(k, v)| (k.to_vec(), v));
                        }
                    }
                }
                // No blocks at all: only memtable entries.
                for (k, v) in edits {
                    if let Some(v) = v {
                        let _ = w.add(k, v);
                    }
                }
            }
            _ => {
                for (k, v) in
                    self.scan::<(Bound<&[u8]>, Bound<&[u8]>)>((Bound::Unbounded, Bound::Unbounded))
                {
                    let _ = w.add(&k, v);
                }
            }
        }
        w.finish()
    }
}
