//! Two processes append to the same document concurrently, on one SQLite
//! file and on one PostgreSQL database; afterwards both, and a third
//! store, load the same document holding every acknowledged op.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use weft_store::{Store, StoreOptions};

use crate::common::{text_of_doc, SqliteDb};
use crate::kill::{child_exe, Acked};

const APPENDS: usize = 150;

/// Runs two children on `target`, 2 threads each, all on document d0.
fn two_processes(backend: &str, target: &str, open: impl Fn() -> Store) {
    // Create the document first, so neither child races the other to it.
    open().create("d0").expect("create");
    let mut children: Vec<_> = (1..=2u64)
        .map(|run| {
            Command::new(child_exe())
                .args([backend, target])
                .args([run, 2, 1, 5, APPENDS as u64].map(|n| n.to_string()))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start a child")
        })
        .collect();
    let mut readers: Vec<_> = children
        .iter_mut()
        .map(|c| BufReader::new(c.stdout.take().expect("piped")))
        .collect();
    let mut acked = Acked::new();
    let read_until = |reader: &mut BufReader<std::process::ChildStdout>,
                      end: &str,
                      acked: &mut Acked|
     -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            assert!(
                reader.read_line(&mut line).expect("read") > 0,
                "child ended early"
            );
            let line = line.trim_end().to_owned();
            if line.starts_with(end) {
                lines.push(line);
                return lines;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["ack", doc, peer, end] = words[..] {
                let e = acked
                    .entry((doc.to_owned(), peer.parse().unwrap()))
                    .or_default();
                *e = (*e).max(end.parse().unwrap());
            }
        }
    };
    for r in &mut readers {
        read_until(r, "done", &mut acked);
    }
    assert_eq!(acked.len(), 4, "four writers acknowledged appends");
    let mut finals = Vec::new();
    for (c, r) in children.iter_mut().zip(&mut readers) {
        c.stdin
            .as_mut()
            .expect("piped")
            .write_all(b"go\n")
            .expect("write");
        finals.push(
            read_until(r, "final", &mut acked)
                .pop()
                .expect("final line"),
        );
    }
    for c in &mut children {
        assert!(c.wait().expect("wait").success());
    }
    assert_eq!(finals[0], finals[1], "the two processes agree");
    let store = open();
    let doc = store.load("d0").expect("load");
    doc.assert_invariants();
    let text = text_of_doc(&doc);
    assert_eq!(finals[0], format!("final d0 {:?} {text}", doc.version()));
    for ((_, peer), end) in &acked {
        assert!(doc.version().get(*peer) >= *end);
    }
    assert_eq!(text.chars().count(), 4 * APPENDS);
}

#[test]
fn two_processes_on_one_sqlite_file_agree() {
    let db = SqliteDb::new();
    let file = db.file();
    two_processes("sqlite", &file.display().to_string(), || {
        Store::open_sqlite(&file, StoreOptions::new()).expect("open")
    });
}

#[test]
fn two_processes_on_one_postgres_database_agree() {
    let db = crate::pg::PgDb::new();
    let config = db.config();
    two_processes("postgres", &config, || {
        Store::connect_postgres(&config, StoreOptions::new()).expect("connect")
    });
}
