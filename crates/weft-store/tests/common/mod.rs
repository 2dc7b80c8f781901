//! Helpers shared by the test modules: temporary directories, documents
//! typed by a peer, a small random generator.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use weft::{Doc, ExportMode, VersionVector};

/// A directory removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "weft-store-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A small deterministic random generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A seed from `WEFT_STORE_SEED`, or from the clock (printed, to replay).
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("WEFT_STORE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("{test}: WEFT_STORE_SEED={seed}");
    seed
}

/// A peer that types into its own copy and hands out one update per edit.
pub struct Typist {
    pub doc: Doc,
}

impl Typist {
    pub fn new(peer: u64) -> Typist {
        let mut doc = Doc::new();
        doc.set_peer_id(peer).expect("valid peer id");
        Typist { doc }
    }

    /// Types `s` at `char_pos` (clamped) and returns the update of that edit.
    pub fn type_at(&mut self, char_pos: usize, s: &str) -> Vec<u8> {
        let before = self.doc.version();
        let len = text_of_doc(&self.doc).chars().count();
        self.doc
            .text("t")
            .insert(char_pos.min(len), s)
            .expect("insert in bounds");
        self.doc
            .export(ExportMode::Updates { from: &before })
            .expect("export")
    }

    /// Everything this peer has, as one update.
    pub fn all(&self) -> Vec<u8> {
        self.doc
            .export(ExportMode::Updates {
                from: &VersionVector::new(),
            })
            .expect("export")
    }

    pub fn text(&self) -> String {
        text_of_doc(&self.doc)
    }
}

/// A database that stores can be opened on, again and again.
pub trait Db {
    /// A store on this database.
    fn open(&self, options: weft_store::StoreOptions) -> weft_store::Store;
    /// Makes every insert of an update row holding `bytes` fail (a
    /// trigger), to inject a failed commit.
    fn fail_inserts_of(&self, bytes: &[u8]);
}

/// A SQLite file in a temporary directory.
pub struct SqliteDb {
    pub dir: TempDir,
}

impl SqliteDb {
    pub fn new() -> SqliteDb {
        SqliteDb {
            dir: TempDir::new("sqlite"),
        }
    }

    pub fn file(&self) -> PathBuf {
        self.dir.path().join("store.db")
    }
}

impl Db for SqliteDb {
    fn open(&self, options: weft_store::StoreOptions) -> weft_store::Store {
        weft_store::Store::open_sqlite(self.file(), options).expect("open SQLite store")
    }

    fn fail_inserts_of(&self, bytes: &[u8]) {
        let sum = xxhash_rust::xxh3::xxh3_64(bytes) as i64;
        rusqlite::Connection::open(self.file())
            .unwrap()
            .execute_batch(&format!(
                "CREATE TRIGGER fail_{n} BEFORE INSERT ON weft_updates WHEN NEW.checksum = {sum}
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
                n = sum.unsigned_abs()
            ))
            .unwrap();
    }
}

/// The text "t" of `doc` ("" if it has none).
pub fn text_of_doc(doc: &Doc) -> String {
    doc.get_text("t").map(|t| t.to_string()).unwrap_or_default()
}
