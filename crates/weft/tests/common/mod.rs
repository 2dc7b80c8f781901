//! Test helpers: a seeded RNG and a tiny, obviously-correct reference CRDT.
#![allow(dead_code, reason = "each test file uses a different subset")]

use std::collections::HashMap;

/// SplitMix64: small, seeded, good enough for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// A short random string mixing ASCII, CJK and astral chars.
    pub fn text(&mut self, max_chars: usize) -> String {
        const ALPHABET: &[&str] = &["a", "b", "c", "x", " ", "é", "文", "😀", "\n", "ß"];
        let n = 1 + self.below(max_chars);
        (0..n)
            .map(|_| ALPHABET[self.below(ALPHABET.len())])
            .collect()
    }
}

type Id = (u64, u32);

#[derive(Clone, Debug)]
struct RefItem {
    id: Id,
    ch: char,
    left: Option<Id>,
    right: Option<Id>,
    deleted: bool,
}

#[derive(Clone, Debug)]
enum RefOp {
    Insert {
        id: Id,
        ch: char,
        left: Option<Id>,
        right: Option<Id>,
    },
    Delete {
        id: Id,
        target: Id,
    },
}

impl RefOp {
    fn id(&self) -> Id {
        match self {
            RefOp::Insert { id, .. } | RefOp::Delete { id, .. } => *id,
        }
    }
}

/// A naive FugueMax list: one element per char in a `Vec`, linear scans
/// everywhere. Ids are assigned exactly as Weft assigns them (one counter
/// per inserted or deleted char), so both must produce the same text.
#[derive(Clone, Debug, Default)]
pub struct RefDoc {
    pub peer: u64,
    items: Vec<RefItem>,
    log: Vec<RefOp>,
    next: HashMap<u64, u32>,
}

impl RefDoc {
    pub fn new(peer: u64) -> Self {
        RefDoc {
            peer,
            ..Default::default()
        }
    }

    pub fn text(&self) -> String {
        self.items
            .iter()
            .filter(|i| !i.deleted)
            .map(|i| i.ch)
            .collect()
    }

    pub fn len(&self) -> usize {
        self.items.iter().filter(|i| !i.deleted).count()
    }

    /// Per peer, the number of ops known.
    pub fn version(&self) -> Vec<(u64, u32)> {
        let mut v: Vec<_> = self
            .next
            .iter()
            .map(|(&p, &c)| (p, c))
            .filter(|e| e.1 > 0)
            .collect();
        v.sort();
        v
    }

    fn knows(&self, id: Id) -> bool {
        self.next.get(&id.0).is_some_and(|&c| id.1 < c)
    }

    fn index_of(&self, id: Id) -> usize {
        self.items
            .iter()
            .position(|i| i.id == id)
            .expect("known id")
    }

    fn visible_index(&self, pos: usize) -> usize {
        self.items
            .iter()
            .enumerate()
            .filter(|(_, i)| !i.deleted)
            .nth(pos)
            .map(|(k, _)| k)
            .expect("pos in bounds")
    }

    fn next_id(&self) -> Id {
        (self.peer, self.next.get(&self.peer).copied().unwrap_or(0))
    }

    pub fn insert(&mut self, pos: usize, s: &str) {
        for (k, ch) in s.chars().enumerate() {
            let p = pos + k;
            let left_idx = if p == 0 {
                None
            } else {
                Some(self.visible_index(p - 1))
            };
            let left = left_idx.map(|i| self.items[i].id);
            let right_idx = left_idx.map_or(0, |i| i + 1);
            let right = self.items.get(right_idx).map(|i| i.id);
            let id = self.next_id();
            self.apply(RefOp::Insert {
                id,
                ch,
                left,
                right,
            });
        }
    }

    pub fn delete(&mut self, pos: usize, len: usize) {
        // Op k deletes the k-th char of the range, in document order.
        let targets: Vec<Id> = self
            .items
            .iter()
            .filter(|i| !i.deleted)
            .skip(pos)
            .take(len)
            .map(|i| i.id)
            .collect();
        for target in targets {
            let id = self.next_id();
            self.apply(RefOp::Delete { id, target });
        }
    }

    fn apply(&mut self, op: RefOp) {
        let id = op.id();
        let next = self.next.entry(id.0).or_insert(0);
        assert_eq!(*next, id.1, "ops arrive in counter order");
        *next += 1;
        match &op {
            RefOp::Insert {
                id,
                ch,
                left,
                right,
            } => self.integrate(RefItem {
                id: *id,
                ch: *ch,
                left: *left,
                right: *right,
                deleted: false,
            }),
            RefOp::Delete { target, .. } => {
                let i = self.index_of(*target);
                self.items[i].deleted = true;
            }
        }
        self.log.push(op);
    }

    /// YjsMod / FugueMax integration, straight from the reference algorithm.
    fn integrate(&mut self, item: RefItem) {
        let len = self.items.len() as isize;
        let left = item.left.map_or(-1, |l| self.index_of(l) as isize);
        let right = item.right.map_or(len, |r| self.index_of(r) as isize);
        let mut dest = left + 1;
        let mut scanning = false;
        let mut i = left + 1;
        loop {
            if !scanning {
                dest = i;
            }
            if i == len || i == right {
                break;
            }
            let other = &self.items[i as usize];
            let oleft = other.left.map_or(-1, |l| self.index_of(l) as isize);
            let oright = other.right.map_or(len, |r| self.index_of(r) as isize);
            if oleft < left {
                break;
            } else if oleft == left {
                if oright < right {
                    scanning = true;
                } else if oright == right {
                    if item.id < other.id {
                        break;
                    }
                    scanning = false;
                } else {
                    scanning = false;
                }
            }
            i += 1;
        }
        self.items.insert(dest as usize, item);
    }

    /// Applies every op `other` has and `self` lacks, in `other`'s order.
    pub fn merge_from(&mut self, other: &RefDoc) {
        for op in &other.log {
            if !self.knows(op.id()) {
                self.apply(op.clone());
            }
        }
    }
}
