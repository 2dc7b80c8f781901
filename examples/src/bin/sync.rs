//! `sync`: latency and join figures of weft-sync, each beside its
//! same-run baseline.
//!
//! ```text
//! cargo run --release -p examples --bin sync            # every figure
//! cargo run --release -p examples --bin sync -- --quick # shorter runs
//! ```
//!
//! - Keystroke latency, one client to the others through one server on
//!   SQLite (durable acks), with 2, 8 and 64 clients on one document, each
//!   typing 10 keystrokes per second; beside it a plain WebSocket echo
//!   round trip and the store's append time, measured in the same run.
//! - The bar: 256 clients on 32 documents (8 each) typing 10 keystrokes
//!   per second each, one server, clients in the same process.
//! - Join on B4: a client that has the document up to 1,000 ops ago vs
//!   one that has nothing: bytes received and time to synced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use traces::Trace;
use weft::{Doc, ExportMode, VersionVector};
use weft_store::{Store, StoreOptions};
use weft_sync::{AllowAll, ClientOptions, Server, ServerOptions, SyncClient};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let seconds = if quick { 3.0 } else { 8.0 };
    let dir = std::env::temp_dir().join(format!("weft-sync-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    // The server on its own runtime (2 worker threads), the clients on
    // another: both share this machine's cores, as in the issue's bar.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let store = Arc::new(
        Store::open_sqlite(dir.join("docs.db"), StoreOptions::new()).expect("open the store"),
    );
    let options = ServerOptions::default();
    let server = Server::new(Arc::clone(&store), Arc::new(AllowAll), options);
    let (addr, _task) = server_rt
        .block_on(server.spawn("127.0.0.1:0"))
        .expect("start the server");
    let url = format!("ws://{addr}");
    let (echo_addr, _echo) = server_rt.block_on(echo_server());

    println!(
        "weft-sync figures (one server on SQLite, clients in this process; {seconds} s per run)"
    );
    println!();
    let echo = client_rt.block_on(echo_round_trips(&format!("ws://{echo_addr}"), 2_000));
    let append = append_times(&store, 1_000);
    println!(
        "baseline: WebSocket echo round trip      p50 {:>8.3} ms  p99 {:>8.3} ms",
        ms(pct(&echo, 50)),
        ms(pct(&echo, 99))
    );
    println!(
        "baseline: store append (durable, 1 thr)  p50 {:>8.3} ms  p99 {:>8.3} ms",
        ms(pct(&append, 50)),
        ms(pct(&append, 99))
    );
    for clients in [2usize, 8, 64] {
        let run = client_rt.block_on(typing(&url, &format!("one{clients}"), 1, clients, seconds));
        run.print(&format!("{clients} clients on 1 document"));
    }
    let run = client_rt.block_on(typing(&url, "bar", 32, 8, seconds));
    run.print("256 clients on 32 documents (the bar)");
    println!(
        "  bar: p99 under 100 ms at 2,560 updates/s: {}",
        if ms(pct(&run.latencies, 99)) < 100.0 {
            "met"
        } else {
            "MISSED"
        }
    );
    println!();
    client_rt.block_on(join_b4(&url, &store));
    drop(client_rt);
    drop(server_rt);
    let _ = std::fs::remove_dir_all(&dir);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// A WebSocket server that sends every message back.
async fn echo_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
                    return;
                };
                while let Some(Ok(m)) = ws.next().await {
                    if m.is_binary() && ws.send(m).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, task)
}

async fn echo_round_trips(url: &str, n: usize) -> Vec<Duration> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("connect");
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        ws.send(Message::Binary(vec![7u8; 60])).await.expect("send");
        loop {
            match ws.next().await {
                Some(Ok(Message::Binary(_))) => break,
                Some(Ok(_)) => {}
                _ => panic!("echo closed"),
            }
        }
        out.push(t.elapsed());
    }
    out.sort();
    out
}

/// The store's append of a one-keystroke update, one thread.
fn append_times(store: &Store, n: usize) -> Vec<Duration> {
    store.create("append-baseline").expect("create");
    let mut doc = Doc::new();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let from = doc.version();
        doc.text("t").insert(i, "a").expect("insert");
        let update = doc
            .export(ExportMode::Updates { from: &from })
            .expect("export");
        let t = Instant::now();
        store.append("append-baseline", &update).expect("append");
        out.push(t.elapsed());
    }
    out.sort();
    out
}

struct Run {
    latencies: Vec<Duration>,
    updates: usize,
    seconds: f64,
}

impl Run {
    fn print(&self, what: &str) {
        println!(
            "{what:<40} p50 {:>8.3} ms  p99 {:>8.3} ms  ({} deliveries, {:.0} updates/s)",
            ms(pct(&self.latencies, 50)),
            ms(pct(&self.latencies, 99)),
            self.latencies.len(),
            self.updates as f64 / self.seconds
        );
    }
}

/// `docs` documents with `per_doc` clients each, every client typing 10
/// keystrokes per second for `seconds`; the latency of every keystroke to
/// every other client of its document.
async fn typing(url: &str, prefix: &str, docs: usize, per_doc: usize, seconds: f64) -> Run {
    struct Member {
        doc: Arc<Mutex<Doc>>,
        client: SyncClient,
        peer: u64,
    }
    // When each keystroke was typed: (peer, counter) -> instant.
    let typed: Arc<Mutex<HashMap<(u64, u32), Instant>>> = Arc::default();
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let mut members = Vec::new();
    let mut watchers = Vec::new();
    for d in 0..docs {
        for c in 0..per_doc {
            let peer = (d * per_doc + c + 1) as u64;
            let mut doc = Doc::new();
            doc.set_peer_id(peer).expect("peer");
            let doc = Arc::new(Mutex::new(doc));
            let client = SyncClient::start(
                url,
                &format!("{prefix}-{d}"),
                Arc::clone(&doc),
                ClientOptions::new(""),
            );
            // Every change of what the server sent this client: the
            // keystrokes of the others that arrived.
            let mut rx = client.watch();
            let typed = Arc::clone(&typed);
            let latencies = Arc::clone(&latencies);
            watchers.push(tokio::spawn(async move {
                let mut seen: HashMap<u64, u32> = HashMap::new();
                while rx.changed().await.is_ok() {
                    let now = Instant::now();
                    let version = rx.borrow_and_update().server_version.clone();
                    let typed = typed.lock().expect("lock");
                    let mut lat = latencies.lock().expect("lock");
                    for (p, end) in version.iter() {
                        if p == peer {
                            continue;
                        }
                        let from = seen.insert(p, end).unwrap_or(0);
                        for counter in from..end {
                            if let Some(t) = typed.get(&(p, counter)) {
                                lat.push(now - *t);
                            }
                        }
                    }
                }
            }));
            members.push(Member { doc, client, peer });
        }
    }
    for m in &members {
        assert!(
            m.client
                .wait_for(Duration::from_secs(60), |s| s.access.is_some())
                .await,
            "a client did not join"
        );
    }
    // Each client types every 100 ms, the clients spread over the period.
    let start = Instant::now();
    let n = members.len();
    let period = Duration::from_millis(100);
    let mut updates = 0;
    let mut tick = 0u64;
    let end = start + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        for (i, m) in members.iter().enumerate() {
            let due = start + period * tick as u32 + period * i as u32 / n as u32;
            tokio::time::sleep_until(due.into()).await;
            let mut doc = m.doc.lock().expect("lock");
            let counter = doc.version().get(m.peer);
            let len = doc.text("t").len();
            doc.text("t").insert(len.min(3), "k").expect("insert");
            typed
                .lock()
                .expect("lock")
                .insert((m.peer, counter), Instant::now());
            doc.commit();
            updates += 1;
        }
        tick += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    // Let the last keystrokes arrive.
    for m in &members {
        m.client.wait_synced(Duration::from_secs(30)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for m in members {
        m.client.close().await;
    }
    for w in watchers {
        w.abort();
    }
    let mut latencies = std::mem::take(&mut *latencies.lock().expect("lock"));
    latencies.sort();
    Run {
        latencies,
        updates,
        seconds,
    }
}

/// Join of B4: a client 1,000 ops behind vs one with nothing.
async fn join_b4(url: &str, store: &Arc<Store>) {
    let trace = Trace::sequential("automerge-paper");
    let mut full = Doc::new();
    full.set_peer_id(1).expect("peer");
    let mut behind = None;
    let total: u64 = trace
        .patches()
        .map(|p| (p.del + p.ins.chars().count()) as u64)
        .sum();
    for p in trace.patches() {
        let mut t = full.text("t");
        if p.del > 0 {
            t.delete(p.pos, p.del).expect("delete");
        }
        if !p.ins.is_empty() {
            t.insert(p.pos, &p.ins).expect("insert");
        }
        if behind.is_none() && full.version().op_count() + 1_000 >= total {
            behind = Some(full.fork());
        }
    }
    full.commit();
    let behind = behind.expect("the trace has over 1,000 ops");
    {
        let store = Arc::clone(store);
        let full = full.fork();
        tokio::task::spawn_blocking(move || {
            store.create("b4").expect("create");
            store.save("b4", &full).expect("save B4");
        })
        .await
        .expect("store task");
    }
    println!(
        "join B4 ({} ops): snapshot {} B, whole-history update {} B",
        full.version().op_count(),
        full.export(ExportMode::Snapshot).expect("export").len(),
        full.export(ExportMode::Updates {
            from: &VersionVector::new()
        })
        .expect("export")
        .len()
    );
    for (what, doc) in [
        ("1,000 ops behind", behind.fork()),
        ("with nothing", Doc::new()),
    ] {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..5 {
            let d = Arc::new(Mutex::new(doc.fork()));
            let t = Instant::now();
            let c = SyncClient::start(url, "b4", Arc::clone(&d), ClientOptions::new(""));
            assert!(c.wait_synced(Duration::from_secs(60)).await, "join failed");
            times.push(t.elapsed());
            bytes = c.state().received_bytes;
            assert_eq!(
                d.lock().expect("lock").text("t").to_string(),
                trace.end_content
            );
            c.close().await;
        }
        times.sort();
        println!(
            "  join, {what:<18} {:>8} B received, {:>8.2} ms to synced (median of 5)",
            bytes,
            ms(times[2])
        );
    }
}
