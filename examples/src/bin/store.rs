//! Replays the B4 trace into a `weft-store` and prints its figures, each
//! beside a baseline measured in the same run.
//!
//! ```text
//! cargo run --release -p examples --bin store -- [TRACE] [--appends N] [--runs R] [--dir DIR]
//! cargo run --release -p examples --features postgres --bin store -- --postgres "host=... dbname=..." [--no-sqlite]
//! ```
//!
//! - **Durable appends per second** of one-keystroke updates with 1 and 8
//!   writer threads (each on its own document, then all 8 on one, as
//!   peers of one document reach a sync server), beside the rate of plain
//!   inserts of the same bytes into the same database, one transaction
//!   each (1 and 8 threads); the 8-writer store is also compared with one
//!   plain thread, the rate of an application that commits each update
//!   itself. Each writer makes `--appends` appends (default 400); the
//!   store and its baselines run back to back in each of `--runs`
//!   rounds, and the medians of the rates and of the rounds' ratios are
//!   printed (this machine's fsync cost swings by 10x within minutes).
//! - **Open**: the trace typed as about 10,000 updates (one per 26
//!   patches for B4), appended, then compacted; a store with an empty
//!   cache opens the document and reads its text, against importing the
//!   same snapshot from memory and reading the text; against the
//!   physical floor of any load from that database, the simplest query
//!   returning the snapshot's bytes (one prepared SELECT by id); and
//!   against that query followed by the same import. Each of 20 x
//!   `--runs` rounds times every variant once, the variants taking
//!   turns at going first; medians, and medians of the rounds' ratios.
//! - **Compaction** of those rows: time, snapshot bytes, bytes on disk
//!   before and after.
//!
//! The SQLite database lives in `--dir` (default: a new directory in the
//! system's temp dir, removed afterwards): put it on the disk you mean to
//! measure, since durable appends cost an fsync there.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use traces::Trace;
use weft::{Doc, ExportMode};
use weft_store::{Store, StoreOptions};

const USAGE: &str = "\
usage: store [TRACE.json.gz] [--appends N] [--runs R] [--dir DIR] [--postgres CONFIG] [--no-sqlite]
             [--what appends|open|all]

Durable append rates (1 and 8 writers) against plain inserts, opening a compacted B4 document
against importing its snapshot from memory, and compaction time and bytes on disk.";

/// Updates B4 is typed as.
const UPDATES: usize = 10_000;

struct Args {
    trace: PathBuf,
    appends: usize,
    runs: usize,
    dir: Option<PathBuf>,
    postgres: Option<String>,
    sqlite: bool,
    /// Run the append rates (`appends`), the open (`open`) or both.
    what: String,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args {
        trace: PathBuf::from("traces/sequential/automerge-paper.json.gz"),
        appends: 400,
        runs: 5,
        dir: None,
        postgres: None,
        sqlite: true,
        what: "all".to_owned(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--appends" => args.appends = it.next().ok_or(USAGE)?.parse()?,
            "--runs" => args.runs = it.next().ok_or(USAGE)?.parse()?,
            "--dir" => args.dir = Some(it.next().ok_or(USAGE)?.into()),
            "--postgres" => args.postgres = Some(it.next().ok_or(USAGE)?),
            "--no-sqlite" => args.sqlite = false,
            "--what" => args.what = it.next().ok_or(USAGE)?,
            _ if !a.starts_with("--") => args.trace = a.into(),
            _ => return Err(format!("unknown option {a}\n{USAGE}").into()),
        }
    }
    if !["appends", "open", "all"].contains(&args.what.as_str()) {
        return Err(format!("--what takes appends, open or all\n{USAGE}").into());
    }
    Ok(args)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("store: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One-keystroke updates typed by `peer`, one per append.
fn keystrokes(peer: u64, n: usize) -> Result<Vec<Vec<u8>>, weft::Error> {
    let mut doc = Doc::new();
    doc.set_peer_id(peer)?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let before = doc.version();
        doc.text("t").insert(i, "k")?;
        out.push(doc.export(ExportMode::Updates { from: &before })?);
    }
    Ok(out)
}

/// Reads a snapshot's bytes with a plain query.
type PlainReader = Box<dyn FnMut() -> Result<Vec<u8>, Box<dyn Error>>>;

/// The database under test: a store on it, and plain inserts into it.
enum Target {
    Sqlite(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(String),
}

impl Target {
    fn name(&self) -> &'static str {
        match self {
            Target::Sqlite(_) => "SQLite",
            #[cfg(feature = "postgres")]
            Target::Postgres(_) => "PostgreSQL",
        }
    }

    fn open(&self, options: StoreOptions) -> Result<Store, Box<dyn Error>> {
        Ok(match self {
            Target::Sqlite(p) => Store::open_sqlite(p, options)?,
            #[cfg(feature = "postgres")]
            Target::Postgres(c) => Store::connect_postgres(c, options)?,
        })
    }

    /// A reader of document `id`'s snapshot bytes with one plain query
    /// on a connection opened here (the floor of any load from this
    /// database).
    fn plain_reader(&self, id: &str) -> Result<PlainReader, Box<dyn Error>> {
        const QUERY: &str = "SELECT s.bytes FROM weft_snapshots s JOIN weft_documents d ON d.key = s.doc WHERE d.id = ";
        let id = id.to_owned();
        Ok(match self {
            Target::Sqlite(p) => {
                let conn = rusqlite::Connection::open(p)?;
                Box::new(move || Ok(conn.query_row(&format!("{QUERY}?1"), [&id], |r| r.get(0))?))
            }
            #[cfg(feature = "postgres")]
            Target::Postgres(c) => {
                let mut client = postgres::Client::connect(c, postgres::NoTls)?;
                let query = client.prepare(&format!("{QUERY}$1"))?;
                Box::new(move || Ok(client.query_one(&query, &[&id])?.get(0)))
            }
        })
    }

    /// Plain inserts of `rows` from one thread, one transaction each, with
    /// the same durability settings as the store.
    fn plain_inserts(&self, rows: &[Vec<u8>]) -> Result<(), Box<dyn Error + Send + Sync>> {
        match self {
            Target::Sqlite(p) => {
                let conn = rusqlite::Connection::open(p)?;
                conn.busy_timeout(std::time::Duration::from_secs(60))?;
                conn.pragma_update(None, "journal_mode", "WAL")?;
                conn.pragma_update(None, "synchronous", "FULL")?;
                conn.execute_batch("CREATE TABLE IF NOT EXISTS plain (bytes BLOB NOT NULL)")?;
                let mut stmt = conn.prepare("INSERT INTO plain (bytes) VALUES (?1)")?;
                for r in rows {
                    stmt.execute([r])?;
                }
            }
            #[cfg(feature = "postgres")]
            Target::Postgres(c) => {
                let mut client = postgres::Client::connect(c, postgres::NoTls)?;
                client.batch_execute(
                    "SET synchronous_commit = on; CREATE TABLE IF NOT EXISTS plain (bytes BYTEA NOT NULL)",
                )?;
                let stmt = client.prepare("INSERT INTO plain (bytes) VALUES ($1)")?;
                for r in rows {
                    client.execute(&stmt, &[r])?;
                }
            }
        }
        Ok(())
    }
}

/// Rows per second of `threads` threads each running `f(thread)`.
fn rate<F>(threads: usize, rows_each: usize, f: F) -> Result<f64, Box<dyn Error>>
where
    F: Fn(usize) -> Result<(), Box<dyn Error + Send + Sync>> + Send + Sync + 'static,
{
    let f = Arc::new(f);
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let f = Arc::clone(&f);
            std::thread::spawn(move || f(t))
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| "a writer panicked")?
            .map_err(|e| e.to_string())?;
    }
    Ok((threads * rows_each) as f64 / start.elapsed().as_secs_f64())
}

/// The store's rate in one round of a case: `threads` writers, each on
/// a document of its own or all on one (`shared`: peers typing into one
/// document, as a sync server sees them). Returns rows/s and commits.
fn store_round(
    target: &Target,
    threads: usize,
    shared: bool,
    round: usize,
    appends: usize,
) -> Result<(f64, u64), Box<dyn Error>> {
    let store = Arc::new(target.open(StoreOptions::new().compaction_ratio(None))?);
    let mut updates = Vec::new();
    for t in 0..threads {
        let id = if shared {
            format!("append-shared-{round}-{}", std::process::id())
        } else {
            format!("append-{threads}-{t}-{round}-{}", std::process::id())
        };
        if t == 0 || !shared {
            store.create(&id)?;
        }
        updates.push((id, keystrokes(1000 + t as u64, appends)?));
    }
    let s = Arc::clone(&store);
    let updates = Arc::new(updates);
    let rows_per_s = rate(threads, appends, move |t| {
        let (id, rows) = &updates[t];
        for r in rows {
            s.append(id, r)?;
        }
        Ok(())
    })?;
    Ok((rows_per_s, store.stats().commits))
}

/// Plain inserts' rate with `threads` threads, one transaction each.
fn plain_round(
    target: &Arc<Target>,
    threads: usize,
    appends: usize,
) -> Result<f64, Box<dyn Error>> {
    let rows: Arc<Vec<Vec<Vec<u8>>>> = Arc::new(
        (0..threads)
            .map(|t| keystrokes(2000 + t as u64, appends))
            .collect::<Result<_, _>>()?,
    );
    let target = Arc::clone(target);
    rate(threads, appends, move |t| target.plain_inserts(&rows[t]))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn appends(target: &Arc<Target>, args: &Args) -> Result<(), Box<dyn Error>> {
    println!(
        "\n{}: durable appends of one-keystroke updates (rows/s, {} per writer; medians of {} rounds, each round measuring the store and both baselines back to back, since this disk's fsync cost swings)",
        target.name(),
        args.appends,
        args.runs
    );
    // Warm up: grow the WAL (SQLite) to its working size first, so that
    // neither side pays for growing the file (an fsync that also commits
    // the file's new size costs several times one that does not).
    let warm = keystrokes(999, 2000)?;
    target.plain_inserts(&warm).map_err(|e| e.to_string())?;
    for (threads, shared) in [(1usize, false), (8, false), (8, true)] {
        let (mut store, mut same, mut one, mut vs_same, mut vs_one) =
            (vec![], vec![], vec![], vec![], vec![]);
        let mut commits = 0;
        for round in 0..args.runs.max(1) {
            let (rate, c) = store_round(target, threads, shared, round, args.appends)?;
            let plain = plain_round(target, threads, args.appends)?;
            let plain_one = if threads == 1 {
                plain
            } else {
                plain_round(target, 1, args.appends)?
            };
            commits += c;
            store.push(rate);
            same.push(plain);
            one.push(plain_one);
            vs_same.push(rate / plain);
            vs_one.push(rate / plain_one);
        }
        let label = match (threads, shared) {
            (1, _) => "1 writer".to_owned(),
            (_, false) => format!("{threads} writers, a document each"),
            (_, true) => format!("{threads} writers on one document"),
        };
        println!(
            "  {label}: store {:.0} rows/s ({:.1} rows per commit); plain inserts, {threads} thread(s): {:.0} rows/s, store {:.2}x; 1 thread: {:.0} rows/s, store {:.2}x",
            median(store),
            (threads * args.appends * args.runs.max(1)) as f64 / commits as f64,
            median(same),
            median(vs_same),
            median(one),
            median(vs_one),
        );
    }
    Ok(())
}

fn b4(target: &Target, trace: &Trace, args: &Args) -> Result<(), Box<dyn Error>> {
    // Type the trace as about UPDATES updates.
    let patches: Vec<_> = trace.patches().collect();
    let per_update = patches.len().div_ceil(UPDATES).max(1);
    let mut doc = Doc::new();
    doc.set_peer_id(1)?;
    let mut updates = Vec::new();
    for chunk in patches.chunks(per_update) {
        let before = doc.version();
        for p in chunk {
            if p.del > 0 {
                doc.text("text").delete(p.pos, p.del)?;
            }
            if !p.ins.is_empty() {
                doc.text("text").insert(p.pos, &p.ins)?;
            }
        }
        updates.push(doc.export(ExportMode::Updates { from: &before })?);
    }
    let text = doc
        .get_text("text")
        .map(|t| t.to_string())
        .unwrap_or_default();
    if text != trace.end_content {
        return Err("the replayed text differs from the trace's endContent".into());
    }
    let id = format!("b4-{}", std::process::id());
    let store = target.open(StoreOptions::new().compaction_ratio(None))?;
    store.create(&id)?;
    let start = Instant::now();
    for u in &updates {
        store.append(&id, u)?;
    }
    let append_s = start.elapsed().as_secs_f64();
    let before = store.size_on_disk()?;
    let start = Instant::now();
    let c = store.compact(&id)?.ok_or("nothing to compact")?;
    let compact_ms = start.elapsed().as_secs_f64() * 1e3;
    let after = store.size_on_disk()?;
    drop(store);
    println!(
        "\n{}: B4 ({} patches) typed as {} updates, appended in {append_s:.1} s by one writer",
        target.name(),
        patches.len(),
        updates.len()
    );
    println!(
        "  compaction: {compact_ms:.0} ms, {} rows ({} KB) -> snapshot {} KB; on disk {} KB -> {} KB",
        c.rows,
        c.row_bytes / 1000,
        c.snapshot_bytes / 1000,
        before / 1000,
        after / 1000
    );

    let snapshot = doc.export(ExportMode::Snapshot)?;
    // A connection each, so that every variant's server process has sat
    // idle for a round when its query comes, as the store's has: a
    // connection queried twice in a row answers the second time faster.
    let mut floor_reader = target.plain_reader(&id)?;
    let mut reader = target.plain_reader(&id)?;
    let store = target.open(StoreOptions::new().compaction_ratio(None))?;
    // Each round times every variant once, back to back, so that a busy
    // phase of the machine costs them all alike; medians of the rounds.
    let (mut memory, mut floor, mut plain, mut open, mut cold) =
        (vec![], vec![], vec![], vec![], vec![]);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    for round in 0..args.runs.max(1) * 20 {
        // The variants take turns at going first: the first query after
        // a pause is slower (the server process and the CPU caches are
        // cold), whichever it is.
        for turn in 0..4 {
            let t = Instant::now();
            let len = match (round + turn) % 4 {
                0 => {
                    let mut d = Doc::new();
                    d.import(&snapshot)?;
                    let len = d.get_text("text").map_or(0, |t| t.to_string().len());
                    memory.push(ms(t));
                    len
                }
                1 => {
                    let bytes = floor_reader()?;
                    floor.push(ms(t));
                    if bytes.len() != snapshot.len() {
                        return Err("the stored snapshot's length differs".into());
                    }
                    text.len()
                }
                2 => {
                    let bytes = reader()?;
                    let mut d = Doc::new();
                    d.import(&bytes)?;
                    let len = d.get_text("text").map_or(0, |t| t.to_string().len());
                    plain.push(ms(t));
                    len
                }
                _ => {
                    store.clear_cache(); // a cold load: read from the database
                    let t = Instant::now();
                    let len = store.read(&id, |d| {
                        d.get_text("text").map_or(0, |t| t.to_string().len())
                    })?;
                    open.push(ms(t));
                    len
                }
            };
            if len != text.len() {
                return Err("a read text has the wrong length".into());
            }
        }

        let t = Instant::now();
        let fresh = target.open(StoreOptions::new().compaction_ratio(None))?;
        let len_cold = fresh.read(&id, |d| {
            d.get_text("text").map_or(0, |t| t.to_string().len())
        })?;
        cold.push(ms(t));
        drop(fresh);
        if len_cold != text.len() {
            return Err("a read text has the wrong length".into());
        }
    }
    let rounds = memory.len();
    let ratio = |a: &[f64], b: &[f64]| median(a.iter().zip(b).map(|(x, y)| x / y).collect());
    println!(
        "  load the stored document (cache empty) and read its text: {:.3} ms; import the snapshot ({} bytes) from memory and read it: {:.3} ms: {:.2}x (medians of {rounds} rounds, each timing every variant once, taking turns at going first)",
        median(open.clone()),
        snapshot.len(),
        median(memory.clone()),
        ratio(&open, &memory),
    );
    println!(
        "  the physical floor: the simplest query returning the snapshot's bytes (one prepared SELECT by id on a connection of the same kind), nothing else: {:.3} ms = {:.2}x the import from memory",
        median(floor.clone()),
        ratio(&floor, &memory),
    );
    println!(
        "  that query, then the same import and read: {:.3} ms; the store's load is {:.2}x that",
        median(plain.clone()),
        ratio(&open, &plain),
    );
    println!(
        "  the same, opening the store too (connections, schema check, threads): {:.2} ms: {:.2}x the import from memory",
        median(cold.clone()),
        ratio(&cold, &memory),
    );
    Ok(())
}

fn run() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let trace = Trace::load(&args.trace)?;
    let temp = std::env::temp_dir().join(format!("weft-store-example-{}", std::process::id()));
    let dir: &Path = args.dir.as_deref().unwrap_or(&temp);
    std::fs::create_dir_all(dir)?;
    let mut targets = Vec::new();
    if args.sqlite {
        targets.push(Target::Sqlite(dir.join("example.db")));
    }
    if let Some(_config) = &args.postgres {
        #[cfg(feature = "postgres")]
        targets.push(Target::Postgres(_config.clone()));
        #[cfg(not(feature = "postgres"))]
        return Err("--postgres needs the example built with --features postgres".into());
    }
    for target in targets {
        let target = Arc::new(target);
        if args.what != "open" {
            appends(&target, &args)?;
        }
        if args.what != "appends" {
            b4(&target, &trace, &args)?;
        }
    }
    if args.dir.is_none() {
        std::fs::remove_dir_all(&temp)?;
    }
    Ok(())
}
