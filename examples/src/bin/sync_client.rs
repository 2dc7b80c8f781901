//! `sync_client`: connects a document to a `weft-server` and prints its
//! sync state. Types the lines you enter (each appended to text "t"), or a
//! whole trace.
//!
//! ```text
//! cargo run --release -p weft-sync --bin weft-server -- --db docs.db --listen 127.0.0.1:8080
//! cargo run --release -p examples --bin sync_client -- --server ws://127.0.0.1:8080 --doc notes
//! cargo run --release -p examples --bin sync_client -- --server ws://127.0.0.1:8080 --doc b4 --trace automerge-paper
//! ```

use std::io::BufRead;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use traces::Trace;
use weft::Doc;
use weft_sync::{ClientOptions, Connection, SyncClient, SyncState};

const USAGE: &str = "usage: sync_client --server URL --doc ID [--token TOKEN] [--trace NAME [--rate PATCHES_PER_SECOND]]";

fn main() {
    if let Err(e) = run() {
        eprintln!("sync_client: {e}");
        std::process::exit(2);
    }
}

fn describe(state: &SyncState, doc: &Mutex<Doc>) -> String {
    let connection = match &state.connection {
        Connection::Connecting => "connecting".to_owned(),
        Connection::Syncing => "syncing".to_owned(),
        Connection::Connected => "connected".to_owned(),
        Connection::Refused { status, message } => format!("refused ({status}): {message}"),
        Connection::Closed => "closed".to_owned(),
    };
    let doc = doc.lock().unwrap_or_else(|e| e.into_inner());
    let synced = state.connection == Connection::Connected
        && state.server_version.includes_all(&doc.version());
    let text = doc.get_text("t").map(|t| t.to_string()).unwrap_or_default();
    let tail: String = {
        let chars: Vec<char> = text.chars().collect();
        let start = chars.len().saturating_sub(60);
        chars[start..].iter().collect()
    };
    format!(
        "[{connection}{}] unacked {} | {} chars | ...{}",
        if synced { ", synced" } else { "" },
        state.unacked,
        text.chars().count(),
        tail.replace('\n', "⏎")
    )
}

fn run() -> Result<(), String> {
    let mut server = None;
    let mut doc_id = None;
    let mut token = String::new();
    let mut trace = None;
    let mut rate: Option<f64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--server" => server = Some(value()?),
            "--doc" => doc_id = Some(value()?),
            "--token" => token = value()?,
            "--trace" => trace = Some(value()?),
            "--rate" => rate = Some(value()?.parse().map_err(|_| "--rate: not a number")?),
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let (Some(server), Some(doc_id)) = (server, doc_id) else {
        return Err(USAGE.to_owned());
    };
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let doc = Arc::new(Mutex::new(Doc::new()));
    let client = runtime.block_on(async {
        SyncClient::start(
            &server,
            &doc_id,
            Arc::clone(&doc),
            ClientOptions::new(token),
        )
    });
    match trace {
        Some(name) => runtime.block_on(type_trace(&client, &doc, &name, rate)),
        None => {
            // Print the state whenever it changes (remote edits included).
            let printer = {
                let doc = Arc::clone(&doc);
                let states = client.watch();
                runtime.spawn(async move {
                    let mut last = String::new();
                    loop {
                        let state = states.borrow().clone();
                        let line = describe(&state, &doc);
                        if line != last {
                            println!("{line}");
                            last = line;
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                })
            };
            println!("type lines; each is appended to the document (Ctrl-D ends)");
            for line in std::io::stdin().lock().lines() {
                let line = line.map_err(|e| e.to_string())?;
                let mut d = doc.lock().unwrap_or_else(|e| e.into_inner());
                let len = d.text("t").len();
                d.text("t")
                    .insert(len, &format!("{line}\n"))
                    .map_err(|e| e.to_string())?;
                d.commit();
            }
            let synced = runtime.block_on(client.wait_synced(Duration::from_secs(10)));
            printer.abort();
            println!("{}", describe(&client.state(), &doc));
            println!("{}", if synced { "synced" } else { "not synced" });
            runtime.block_on(client.close());
            Ok(())
        }
    }
}

async fn type_trace(
    client: &SyncClient,
    doc: &Mutex<Doc>,
    name: &str,
    rate: Option<f64>,
) -> Result<(), String> {
    let trace = Trace::sequential(name);
    let patches: Vec<_> = trace.patches().cloned().collect();
    let started = Instant::now();
    println!("typing {} patches of {name}", patches.len());
    for (i, p) in patches.iter().enumerate() {
        {
            let mut d = doc.lock().unwrap_or_else(|e| e.into_inner());
            let mut t = d.text("t");
            if p.del > 0 {
                t.delete(p.pos, p.del).map_err(|e| e.to_string())?;
            }
            if !p.ins.is_empty() {
                t.insert(p.pos, &p.ins).map_err(|e| e.to_string())?;
            }
            d.commit();
        }
        if let Some(rate) = rate {
            let due = started + Duration::from_secs_f64((i + 1) as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
        } else if i % 64 == 0 {
            tokio::task::yield_now().await;
        }
        if i % 20_000 == 0 {
            println!("{}", describe(&client.state(), doc));
        }
    }
    let synced = client.wait_synced(Duration::from_secs(120)).await;
    println!("{}", describe(&client.state(), doc));
    let text = doc
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_text("t")
        .map(|t| t.to_string())
        .unwrap_or_default();
    println!(
        "typed in {:.2} s; {}; text {} the trace's endContent",
        started.elapsed().as_secs_f64(),
        if synced { "synced" } else { "NOT synced" },
        if text == trace.end_content {
            "equals"
        } else {
            "differs from"
        }
    );
    Ok(())
}
