//! `weft-store` on SQLite: durable appends of one-keystroke updates with
//! 1 and 8 writers beside plain one-transaction inserts of the same bytes
//! into the same database; a cold load of the compacted B4 document beside
//! importing its snapshot from memory; compaction of B4 typed as about
//! 10,000 updates.
//!
//! The database lives in `WEFT_STORE_BENCH_DIR` (default: the system's temp
//! dir): durable appends cost an fsync on that disk. PostgreSQL figures come
//! from `cargo run --release -p examples --features postgres --bin store --
//! --postgres CONFIG`, which needs a server.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use traces::Trace;
use weft::{Doc, ExportMode};
use weft_store::{Store, StoreOptions};

fn dir(name: &str) -> PathBuf {
    let base =
        std::env::var_os("WEFT_STORE_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = base.join(format!("weft-store-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("bench dir");
    dir
}

fn keystroke(doc: &mut Doc, i: usize) -> Vec<u8> {
    let before = doc.version();
    doc.text("t").insert(i, "k").expect("in bounds");
    doc.export(ExportMode::Updates { from: &before })
        .expect("export")
}

fn open_plain(path: &std::path::Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.busy_timeout(Duration::from_secs(60))
        .expect("busy timeout");
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("WAL");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("FULL");
    conn.execute_batch("CREATE TABLE IF NOT EXISTS plain (bytes BLOB NOT NULL)")
        .expect("table");
    conn
}

/// Runs `iters` operations split over `threads` threads; the wall time.
fn parallel(
    threads: usize,
    iters: u64,
    f: impl Fn(usize, u64) + Send + Sync + 'static,
) -> Duration {
    let f = Arc::new(f);
    let each = iters.div_ceil(threads as u64);
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let f = Arc::clone(&f);
            std::thread::spawn(move || f(t, each))
        })
        .collect();
    for h in handles {
        h.join().expect("writer");
    }
    start.elapsed()
}

fn appends(c: &mut Criterion) {
    let dir = dir("append");
    let path = dir.join("store.db");
    let store = Arc::new(
        Store::open_sqlite(&path, StoreOptions::new().compaction_ratio(None)).expect("open"),
    );
    // Grow the WAL to its working size first (see the store example).
    {
        let conn = open_plain(&path);
        let mut doc = Doc::new();
        for i in 0..2000 {
            conn.execute(
                "INSERT INTO plain (bytes) VALUES (?1)",
                [keystroke(&mut doc, i)],
            )
            .expect("insert");
        }
    }
    let mut group = c.benchmark_group("store_append");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(1));
    for threads in [1usize, 8] {
        for t in 0..threads {
            let _ = store.create(&format!("w{threads}-{t}"));
        }
        let s = Arc::clone(&store);
        group.bench_function(BenchmarkId::new("store", threads), |b| {
            b.iter_custom(|iters| {
                let s = Arc::clone(&s);
                parallel(threads, iters, move |t, n| {
                    let id = format!("w{threads}-{t}");
                    let mut doc = s.load(&id).expect("load");
                    let start = doc.get_text("t").map_or(0, |t| t.len());
                    for i in 0..n as usize {
                        s.append(&id, &keystroke(&mut doc, start + i))
                            .expect("append");
                    }
                })
            })
        });
        let p = path.clone();
        group.bench_function(BenchmarkId::new("plain_insert", threads), |b| {
            b.iter_custom(|iters| {
                let p = p.clone();
                parallel(threads, iters, move |_, n| {
                    let conn = open_plain(&p);
                    let mut doc = Doc::new();
                    for i in 0..n as usize {
                        conn.execute(
                            "INSERT INTO plain (bytes) VALUES (?1)",
                            [keystroke(&mut doc, i)],
                        )
                        .expect("insert");
                    }
                })
            })
        });
    }
    group.finish();
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// B4 typed as about 10,000 updates.
fn b4_updates() -> (Doc, Vec<u8>, Vec<Vec<u8>>) {
    let trace = Trace::sequential("automerge-paper");
    let patches: Vec<_> = trace.patches().collect();
    let per = patches.len().div_ceil(10_000);
    let mut doc = Doc::new();
    let mut updates = Vec::new();
    for chunk in patches.chunks(per) {
        let before = doc.version();
        for p in chunk {
            if p.del > 0 {
                doc.text("text").delete(p.pos, p.del).expect("delete");
            }
            if !p.ins.is_empty() {
                doc.text("text").insert(p.pos, &p.ins).expect("insert");
            }
        }
        updates.push(
            doc.export(ExportMode::Updates { from: &before })
                .expect("export"),
        );
    }
    assert_eq!(
        doc.get_text("text").map(|t| t.to_string()).as_deref(),
        Some(&*trace.end_content)
    );
    let snapshot = doc.export(ExportMode::Snapshot).expect("snapshot");
    (doc, snapshot, updates)
}

fn b4(c: &mut Criterion) {
    let (_, snapshot, updates) = b4_updates();
    let dir = dir("b4");
    let template = dir.join("template.db");
    {
        let store = Store::open_sqlite(&template, StoreOptions::new().compaction_ratio(None))
            .expect("open");
        store.create("b4").expect("create");
        // One writer's appends, as typed.
        for u in &updates {
            store.append("b4", u).expect("append");
        }
    }
    let mut group = c.benchmark_group("store_b4");
    group.sample_size(10);
    let work = dir.join("work.db");
    group.bench_function("compact", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for ext in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{ext}", work.display()));
                }
                std::fs::copy(&template, &work).expect("copy");
                let store = Store::open_sqlite(&work, StoreOptions::new().compaction_ratio(None))
                    .expect("open");
                let start = Instant::now();
                store.compact("b4").expect("compact").expect("rows");
                total += start.elapsed();
            }
            total
        })
    });
    let store =
        Store::open_sqlite(&work, StoreOptions::new().compaction_ratio(None)).expect("open");
    let len = store
        .read("b4", |d| d.get_text("text").map_or(0, |t| t.len()))
        .expect("read");
    group.bench_function("load_cold_and_read", |b| {
        b.iter(|| {
            store.clear_cache();
            let text = store
                .read("b4", |d| d.get_text("text").map(|t| t.to_string()))
                .expect("read")
                .expect("text");
            assert_eq!(text.chars().count(), len);
        })
    });
    group.bench_function("import_snapshot_from_memory_and_read", |b| {
        b.iter(|| {
            let mut d = Doc::new();
            d.import(&snapshot).expect("import");
            let text = d.get_text("text").map(|t| t.to_string()).expect("text");
            assert_eq!(text.chars().count(), len);
        })
    });
    group.finish();
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, appends, b4);
criterion_main!(benches);
