//! The child process of the kill -9 test (`tests/main.rs`, module `kill`):
//! appends one-keystroke updates from several threads to many documents
//! and prints `ack <document> <peer> <counter end>` as each append
//! returns, until it is killed (or a bound on time or appends ends it).
//! An append that fails (the database went away) is retried.
//!
//! Usage: `crash_child sqlite <file> <run> <threads> <documents> <pause ms>
//! [<appends per thread>]` or `crash_child postgres <config> ...`.
//! With a number of appends, each thread stops after that many; the
//! process then prints `done`, waits for a line on stdin, and prints
//! `final <document> <version> <text>` for each document as its store
//! loads it (the two-process test compares them).
//! `run` makes the peer ids of this process new: `run * 256 + thread + 1`.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use weft::ExportMode;
use weft_store::{Error, Store, StoreOptions};

/// Bounds, in case the parent never kills.
const MAX_SECONDS: u64 = 60;
const MAX_APPENDS: usize = 20_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (backend, target, run, threads, docs, pause, appends) = match &args[..] {
        [_, b, t, r, th, d, p] => (b, t, r, th, d, p, None),
        [_, b, t, r, th, d, p, a] => (b, t, r, th, d, p, Some(a.parse::<usize>()?)),
        _ => {
            return Err(
                "usage: crash_child sqlite|postgres <target> <run> <threads> \
                 <documents> <pause ms> [<appends>]"
                    .into(),
            )
        }
    };
    let max_appends = appends.unwrap_or(MAX_APPENDS);
    let run: u64 = run.parse()?;
    let threads: u64 = threads.parse()?;
    let docs: usize = docs.parse()?;
    let options = StoreOptions::new()
        .compaction_ratio(Some(1.0))
        .compaction_min_bytes(512)
        .compaction_pause(Duration::from_millis(pause.parse()?));
    let store = Arc::new(match backend.as_str() {
        "sqlite" => Store::open_sqlite(target, options)?,
        #[cfg(feature = "postgres")]
        "postgres" => Store::connect_postgres(target, options)?,
        other => return Err(format!("unknown backend {other}").into()),
    });
    for d in 0..docs {
        match store.create(&format!("d{d}")) {
            Ok(_) | Err(Error::AlreadyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    println!("ready");
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || -> Result<(), Error> {
                let peer = run * 256 + t + 1;
                let mut copies = Vec::new();
                for d in 0..docs {
                    let mut doc = loop {
                        match store.load(&format!("d{d}")) {
                            Ok(doc) => break doc,
                            Err(e) if start.elapsed() > Duration::from_secs(MAX_SECONDS) => {
                                return Err(e)
                            }
                            Err(e) => {
                                println!("error {e}");
                                std::thread::sleep(Duration::from_millis(20));
                            }
                        }
                    };
                    doc.set_peer_id(peer).map_err(|e| Error::Import {
                        document: format!("d{d}"),
                        source: e,
                    })?;
                    copies.push(doc);
                }
                let mut x = peer.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for i in 0..max_appends {
                    if start.elapsed() > Duration::from_secs(MAX_SECONDS) {
                        break;
                    }
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let d = (x % docs as u64) as usize;
                    let id = format!("d{d}");
                    let doc = &mut copies[d];
                    let before = doc.version();
                    let len = doc.get_text("t").map_or(0, |t| t.len());
                    let pos = (x >> 20) as usize % (len + 1);
                    doc.text("t")
                        .insert(pos, if i % 2 == 0 { "a" } else { "b" })
                        .map_err(|e| Error::Import {
                            document: id.clone(),
                            source: e,
                        })?;
                    let update =
                        doc.export(ExportMode::Updates { from: &before })
                            .map_err(|e| Error::Import {
                                document: id.clone(),
                                source: e,
                            })?;
                    // While the database is away (a PostgreSQL server
                    // stopped by the test), retry the same update: later
                    // ones build on it.
                    while let Err(e) = store.append(&id, &update) {
                        if start.elapsed() > Duration::from_secs(MAX_SECONDS) {
                            return Err(e);
                        }
                        println!("error {e}");
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    let end = doc.version().get(peer);
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ack {id} {peer} {end}").ok();
                    out.flush().ok();
                }
                Ok(())
            })
        })
        .collect();
    for w in workers {
        w.join().map_err(|_| "a worker panicked")??;
    }
    if appends.is_some() {
        println!("done");
        std::io::stdin().read_line(&mut String::new())?;
        for d in 0..docs {
            let id = format!("d{d}");
            let doc = store.load(&id)?;
            let text = doc.get_text("t").map(|t| t.to_string()).unwrap_or_default();
            println!("final {id} {:?} {text}", doc.version());
        }
    }
    Ok(())
}
