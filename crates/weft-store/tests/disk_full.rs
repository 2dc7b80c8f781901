//! A full disk: the store lives on a size-limited tmpfs that the test
//! mounts (it runs as root in CI). Appends fail with `StorageFull` naming
//! the document, nothing acknowledged is lost, compaction fails and is
//! tried again, and once the tmpfs grows the store works again.
//!
//! Mounting needs root; run as another user the test says so and checks
//! nothing (CI runs `.ci/run` as root, where it always runs).

use std::path::{Path, PathBuf};
use std::process::Command;

use weft_store::{Error, Store, StoreOptions};

use crate::common::{text_of_doc, TempDir, Typist};

/// A tmpfs mounted on a temporary directory, unmounted when dropped.
struct Tmpfs {
    dir: TempDir,
    mount: PathBuf,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = TempDir::new("tmpfs");
        let mount = dir.path().join("fs");
        std::fs::create_dir_all(&mount).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mount)
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs { dir, mount })
    }

    fn resize(&self, size: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.mount)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount the tmpfs");
    }

    fn path(&self) -> &Path {
        &self.mount
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
        let _ = &self.dir;
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn a_full_disk_fails_appends_loses_nothing_and_recovers() {
    if !is_root() {
        eprintln!("a_full_disk_fails_appends_loses_nothing_and_recovers: needs root to mount a tmpfs; not run");
        return;
    }
    let fs = Tmpfs::mount("512k").expect("mount a tmpfs (root)");
    let file = fs.path().join("store.db");
    let options = StoreOptions::new().compaction_ratio(None);
    let store = Store::open_sqlite(&file, options.clone()).expect("open");
    store.create("doc").unwrap();
    let mut p = Typist::new(1);
    // 2 KB of text per append: about 250 fill 512 KB.
    let chunk: String = (0..2000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let mut acked = 0usize;
    let mut acked_text = String::new();
    let full = loop {
        assert!(acked < 2000, "the disk never filled");
        let update = p.type_at(usize::MAX, &chunk);
        match store.append("doc", &update) {
            Ok(_) => {
                acked += 1;
                acked_text = p.text();
            }
            Err(e) => break e,
        }
    };
    assert!(
        matches!(&full, Error::StorageFull { document: Some(d) } if d == "doc"),
        "expected StorageFull for doc, got {full:?}"
    );
    assert!(full.to_string().contains("no space left"), "{full}");
    assert!(acked > 10, "{acked} appends before the disk filled");
    // Still full: appends keep failing cleanly; compaction fails too.
    assert!(store.append("doc", &p.type_at(0, &chunk)).is_err());
    let compaction = store.compact("doc");
    assert!(
        compaction.is_err(),
        "compaction needs space: {compaction:?}"
    );

    // Nothing acknowledged is lost, nothing else is there, even while full.
    let doc = store.load("doc").expect("reads work on a full disk");
    assert_eq!(text_of_doc(&doc), acked_text);

    fs.resize("8m");
    let reopened = Store::open_sqlite(&file, StoreOptions::new()).expect("open once space is back");
    assert_eq!(reopened.read("doc", text_of_doc).unwrap(), acked_text);
    drop(reopened);
    // The failed append's ops are re-sent inside the next update from the
    // typist's view (it exports from its version before the edit, so the
    // two unstored edits travel again here).
    store.append("doc", &p.all()).expect("appends work again");
    let c = store
        .compact("doc")
        .expect("compaction works again")
        .expect("rows");
    assert!(c.rows > acked);
    drop(store);
    let store = Store::open_sqlite(&file, options).expect("reopen");
    let doc = store.load("doc").unwrap();
    doc.assert_invariants();
    assert_eq!(
        text_of_doc(&doc),
        p.text(),
        "every acknowledged append is there"
    );
    assert!(store.check().unwrap().is_ok());
}
