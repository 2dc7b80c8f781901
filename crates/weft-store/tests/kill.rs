//! kill -9: a child process appends from several threads to many
//! documents and prints each acknowledgement; the parent kills it at
//! random moments (compaction slowed down between its steps, so that many
//! kills land inside one), reopens the store and checks that every
//! acknowledged update is there, that every document loads and passes
//! `assert_invariants`, and that compaction still runs.
//!
//! `WEFT_STORE_KILLS` sets the number of kills (200 by default),
//! `WEFT_STORE_SEED` replays a campaign.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use weft_store::{Store, StoreOptions};

use crate::common::{seed, Rng, SqliteDb};

pub const THREADS: u64 = 4;
pub const DOCS: usize = 8;

/// The crash child, built by `cargo test` beside this test binary.
pub fn child_exe() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let child = dir.join("examples").join("crash_child");
    assert!(
        child.exists(),
        "{} is missing: run through cargo test",
        child.display()
    );
    child
}

pub fn kills(default: usize) -> usize {
    std::env::var("WEFT_STORE_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Counts of a campaign.
#[derive(Debug, Default)]
pub struct Campaign {
    pub kills: usize,
    pub acks: usize,
    pub killed_before_ready: usize,
    pub server_stops: usize,
}

/// Acknowledged counter ends, by (document, peer).
pub type Acked = HashMap<(String, u64), u32>;

/// Starts the child, kills it after a random delay (calling `mid_load`
/// first, if given, while it appends), and records the acknowledgements
/// it printed.
pub fn run_and_kill(
    mut cmd: Command,
    rng: &mut Rng,
    acked: &mut Acked,
    campaign: &mut Campaign,
    mid_load: Option<&dyn Fn()>,
) {
    let mut child: Child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the crash child");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut lines = Vec::new();
    if rng.below(10) == 0 {
        // Kill while it opens the store (and reads what the last one left).
        std::thread::sleep(Duration::from_millis(rng.below(30)));
        campaign.killed_before_ready += 1;
    } else {
        let mut line = String::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !line.starts_with("ready") {
            line.clear();
            let n = stdout.read_line(&mut line).expect("read child output");
            if n == 0 || Instant::now() > deadline {
                let _ = child.kill();
                let mut err = String::new();
                let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
                panic!("the child ended before it was ready: {err}");
            }
            lines.push(line.clone());
        }
        std::thread::sleep(Duration::from_millis(rng.below(150)));
        if let Some(f) = mid_load {
            f();
            std::thread::sleep(Duration::from_millis(rng.below(100)));
        }
    }
    child.kill().expect("kill -9");
    let status = child.wait().expect("wait for the child");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("read child output");
    if status.signal() != Some(9) {
        let mut err = String::new();
        let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
        panic!("the child ended by itself ({status}) before the kill: {err}");
    }
    campaign.kills += 1;
    for line in lines.iter().map(String::as_str).chain(rest.lines()) {
        let mut words = line.split_whitespace();
        if words.next() != Some("ack") {
            continue;
        }
        let (Some(doc), Some(peer), Some(end)) = (words.next(), words.next(), words.next()) else {
            // The kill can cut the last line short: it was not complete,
            // so its append is not counted as acknowledged here.
            continue;
        };
        let (Ok(peer), Ok(end)) = (peer.parse::<u64>(), end.parse::<u32>()) else {
            continue;
        };
        campaign.acks += 1;
        let e = acked.entry((doc.to_owned(), peer)).or_default();
        *e = (*e).max(end);
    }
}

/// Every acknowledged op is in its document; every document loads and
/// holds its invariants.
pub fn verify(store: &Store, acked: &Acked) {
    for d in 0..DOCS {
        let id = format!("d{d}");
        let doc = match store.load(&id) {
            Ok(doc) => doc,
            // The first child may be killed before it created them all.
            Err(weft_store::Error::UnknownDocument { .. }) => {
                assert!(acked.keys().all(|(doc, _)| *doc != id), "{id} lost");
                continue;
            }
            Err(e) => panic!("{id} does not load: {e}"),
        };
        doc.assert_invariants();
        let version = doc.version();
        for ((doc_id, peer), end) in acked {
            if *doc_id == id {
                assert!(
                    version.get(*peer) >= *end,
                    "{id}: peer {peer} acknowledged up to {end}, stored {}",
                    version.get(*peer)
                );
            }
        }
    }
}

#[test]
fn acknowledged_appends_survive_kill_9_on_sqlite() {
    let seed = seed("kill9_sqlite");
    let mut rng = Rng::new(seed);
    let db = SqliteDb::new();
    let runs = kills(200);
    let mut acked = Acked::new();
    let mut campaign = Campaign::default();
    let start = Instant::now();
    for run in 1..=runs as u64 {
        let pause = rng.below(4) * 10;
        let mut cmd = Command::new(child_exe());
        cmd.arg("sqlite")
            .arg(db.file())
            .args([run, THREADS, DOCS as u64, pause].map(|n| n.to_string()));
        run_and_kill(cmd, &mut rng, &mut acked, &mut campaign, None);
        let store = Store::open_sqlite(db.file(), StoreOptions::new().compaction_ratio(None))
            .expect("reopen after kill -9");
        verify(&store, &acked);
        if run % 25 == 0 || run == runs as u64 {
            let report = store.check().expect("check");
            assert!(
                report.is_ok(),
                "{:?} {:?}",
                report.problems,
                report.database
            );
        }
    }
    // Compaction still runs after all those kills.
    let store = Store::open_sqlite(db.file(), StoreOptions::new().compaction_ratio(None)).unwrap();
    let mut generations = 0;
    for d in 0..DOCS {
        if let Some(c) = store.compact(&format!("d{d}")).expect("compaction runs") {
            generations += c.generation - 1;
        }
    }
    verify(&store, &acked);
    let report = store.check().unwrap();
    assert!(report.is_ok());
    eprintln!(
        "kill9_sqlite: {} kills ({} before ready), {} acknowledged appends, {} snapshots written by the children, {:.1} s",
        campaign.kills,
        campaign.killed_before_ready,
        campaign.acks,
        generations,
        start.elapsed().as_secs_f64()
    );
    assert!(campaign.acks > runs, "the children acknowledged appends");
    assert!(generations > 0, "the children compacted");
}

#[test]
fn acknowledged_appends_survive_kill_9_and_server_crashes_on_postgres() {
    let seed = seed("kill9_postgres");
    let mut rng = Rng::new(seed);
    let server = crate::pg::PgServer::start();
    let config = server.config(&server.new_database());
    let runs = kills(100);
    let mut acked = Acked::new();
    let mut campaign = Campaign::default();
    let start = Instant::now();
    let stopped = std::cell::Cell::new(false);
    let stop = || {
        server.stop_immediate();
        stopped.set(true);
    };
    for run in 1..=runs as u64 {
        let pause = rng.below(4) * 10;
        let mut cmd = Command::new(child_exe());
        cmd.arg("postgres")
            .arg(&config)
            .args([run, THREADS, DOCS as u64, pause].map(|n| n.to_string()));
        // Every fifth run the server crashes under the load first.
        let crash = run % 5 == 0;
        run_and_kill(
            cmd,
            &mut rng,
            &mut acked,
            &mut campaign,
            crash.then_some(&stop as &dyn Fn()),
        );
        if stopped.replace(false) {
            campaign.server_stops += 1;
            server.start_again();
        }
        let store = Store::connect_postgres(&config, StoreOptions::new().compaction_ratio(None))
            .expect("reconnect after kill -9");
        verify(&store, &acked);
        if run % 25 == 0 || run == runs as u64 {
            let report = store.check().expect("check");
            assert!(report.is_ok(), "{:?}", report.problems);
        }
    }
    let store =
        Store::connect_postgres(&config, StoreOptions::new().compaction_ratio(None)).unwrap();
    let mut generations = 0;
    for d in 0..DOCS {
        if let Some(c) = store.compact(&format!("d{d}")).expect("compaction runs") {
            generations += c.generation - 1;
        }
    }
    verify(&store, &acked);
    eprintln!(
        "kill9_postgres: {} kills ({} before ready), {} immediate server stops, {} acknowledged appends, {} snapshots written by the children, {:.1} s",
        campaign.kills,
        campaign.killed_before_ready,
        campaign.server_stops,
        campaign.acks,
        generations,
        start.elapsed().as_secs_f64()
    );
    assert!(campaign.acks > runs);
    assert!(generations > 0, "the children compacted");
}
