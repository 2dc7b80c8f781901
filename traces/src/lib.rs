//! Loader for the editing traces stored in this directory.
//!
//! The traces come from `josephg/editing-traces` (see `README.md` beside this
//! file for credits and licences). Each file is gzipped JSON:
//!
//! - `sequential/*.json.gz`: one user's edits, in order. Every transaction holds
//!   patches `[pos, del, ins]`: delete `del` chars at `pos`, then insert `ins`
//!   at `pos`. Positions count Unicode scalar values (chars).
//! - `concurrent/*.json.gz`: transactions also name their `parents` (indexes of
//!   earlier transactions whose merged state they were typed on) and `agent`.
//!
//! Tests, examples and benches load traces only through this crate, so nothing
//! reaches outside the repository.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One edit: delete `del` chars at `pos`, then insert `ins` at `pos`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "(usize, usize, String)")]
pub struct Patch {
    /// Char offset where the edit happens.
    pub pos: usize,
    /// Number of chars deleted at `pos`.
    pub del: usize,
    /// Text inserted at `pos` after the deletion.
    pub ins: String,
}

impl From<(usize, usize, String)> for Patch {
    fn from((pos, del, ins): (usize, usize, String)) -> Self {
        Patch { pos, del, ins }
    }
}

/// One user transaction: a group of patches applied together.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Txn {
    /// Indexes of the earlier transactions this one was typed on (concurrent
    /// traces only; empty means "the document at the start").
    #[serde(default)]
    pub parents: Vec<usize>,
    /// The user who typed this transaction (concurrent traces only).
    #[serde(default)]
    pub agent: u32,
    /// The edits, applied in order.
    pub patches: Vec<Patch>,
}

/// A whole trace file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    /// The document before the first transaction (empty in every stored trace).
    #[serde(default)]
    pub start_content: String,
    /// The expected document after all transactions.
    pub end_content: String,
    /// The transactions, in an order where parents come first.
    pub txns: Vec<Txn>,
}

/// Why a trace could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be read or decompressed.
    Io(std::io::Error),
    /// The file is not a trace in the expected JSON shape.
    Json(serde_json::Error),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "cannot read trace: {e}"),
            LoadError::Json(e) => write!(f, "trace is not valid JSON: {e}"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io(e) => Some(e),
            LoadError::Json(e) => Some(e),
        }
    }
}

impl Trace {
    /// Reads a trace file (`.json` or `.json.gz`).
    ///
    /// # Errors
    ///
    /// [`LoadError::Io`] if the file cannot be read, [`LoadError::Json`] if it
    /// is not a trace.
    pub fn load(path: impl AsRef<Path>) -> Result<Trace, LoadError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(LoadError::Io)?;
        let mut json = String::new();
        if path.extension().is_some_and(|e| e == "gz") {
            flate2::read::GzDecoder::new(file)
                .read_to_string(&mut json)
                .map_err(LoadError::Io)?;
        } else {
            std::io::BufReader::new(file)
                .read_to_string(&mut json)
                .map_err(LoadError::Io)?;
        }
        serde_json::from_str(&json).map_err(LoadError::Json)
    }

    /// Loads `sequential/<name>.json.gz` from this directory.
    ///
    /// # Panics
    ///
    /// If the trace is missing or unreadable: this is a test helper.
    pub fn sequential(name: &str) -> Trace {
        let path = dir().join("sequential").join(format!("{name}.json.gz"));
        Trace::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Loads `concurrent/<name>.json.gz` from this directory.
    ///
    /// # Panics
    ///
    /// If the trace is missing or unreadable: this is a test helper.
    pub fn concurrent(name: &str) -> Trace {
        let path = dir().join("concurrent").join(format!("{name}.json.gz"));
        Trace::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Whether any transaction names parents (the trace needs CRDT merging).
    pub fn is_concurrent(&self) -> bool {
        self.txns.iter().any(|t| !t.parents.is_empty())
    }

    /// Iterates over every patch of every transaction, in order.
    pub fn patches(&self) -> impl Iterator<Item = &Patch> + '_ {
        self.txns.iter().flat_map(|t| t.patches.iter())
    }

    /// Number of patches in the trace.
    pub fn patch_count(&self) -> usize {
        self.txns.iter().map(|t| t.patches.len()).sum()
    }

    /// Chars inserted plus chars deleted: the usual denominator for ops/s.
    pub fn char_op_count(&self) -> usize {
        self.patches().map(|p| p.del + p.ins.chars().count()).sum()
    }
}

/// What [`Trace::replay_concurrent`] needs from a CRDT: how to make,
/// copy and merge replicas and apply one transaction.
pub trait Replica: Sized {
    /// Error of the CRDT's operations.
    type Error;
    /// An empty document.
    fn empty() -> Self;
    /// A copy with the same history.
    fn fork(&self) -> Self;
    /// Brings in every op `other` has and `self` lacks.
    fn merge_from(&mut self, other: &mut Self) -> Result<(), Self::Error>;
    /// Applies transaction `txn` (its `agent` edits).
    fn apply(&mut self, txn: &Txn) -> Result<(), Self::Error>;
}

impl Trace {
    /// Replays a concurrent trace: each transaction is applied to a copy of
    /// its first parent's document into which its other parents were
    /// merged, then every document nobody built on is merged into the
    /// result. A parent's document is reused instead of copied when this is
    /// its last child.
    ///
    /// # Errors
    ///
    /// The first error of the replica's operations.
    pub fn replay_concurrent<R: Replica>(&self) -> Result<R, R::Error> {
        let n = self.txns.len();
        let mut children = vec![0usize; n];
        for t in &self.txns {
            for &p in &t.parents {
                children[p] += 1;
            }
        }
        let mut docs: Vec<Option<R>> = (0..n).map(|_| None).collect();
        let mut heads = Vec::new();
        for (i, txn) in self.txns.iter().enumerate() {
            let mut doc = match txn.parents.split_first() {
                None => R::empty(),
                Some((&first, rest)) => {
                    children[first] -= 1;
                    let mut doc = if children[first] == 0 {
                        docs[first].take().expect("parents come first")
                    } else {
                        docs[first].as_ref().expect("parents come first").fork()
                    };
                    for &p in rest {
                        children[p] -= 1;
                        doc.merge_from(docs[p].as_mut().expect("parents come first"))?;
                        if children[p] == 0 {
                            docs[p] = None;
                        }
                    }
                    doc
                }
            };
            doc.apply(txn)?;
            if children[i] == 0 {
                heads.push(i);
            }
            docs[i] = Some(doc);
        }
        let mut out = R::empty();
        for h in heads {
            out.merge_from(docs[h].as_mut().expect("heads stay alive"))?;
        }
        Ok(out)
    }
}

/// The directory holding the traces (this crate's manifest directory).
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Names of the stored sequential traces, sorted (file names without
/// `.json.gz`).
pub fn sequential_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir().join("sequential"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    name.strip_suffix(".json.gz").map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_traces_are_listed_and_load() {
        let names = sequential_names();
        assert!(names.contains(&"automerge-paper".to_owned()), "{names:?}");
        let t = Trace::sequential("friendsforever_flat");
        assert!(!t.is_concurrent());
        assert_eq!(t.patch_count(), 26_078);
    }

    #[test]
    fn concurrent_trace_has_parents() {
        let t = Trace::concurrent("friendsforever");
        assert!(t.is_concurrent());
        assert!(t
            .txns
            .iter()
            .all(|x| x.parents.iter().all(|&p| p < t.txns.len())));
    }
}
