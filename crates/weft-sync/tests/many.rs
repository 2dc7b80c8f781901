//! Many documents: one server holds 2,000 documents joined and written by
//! 40 connections (50 each); once idle they unload, and joining them again
//! loads them back from the store.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use weft::{Doc, ExportMode, VersionVector};
use weft_sync::protocol::{ClientMessage, ServerMessage};
use weft_sync::Status;

use crate::common::TempDir;
use crate::harness::{open_sqlite, runtime, ServerProcess};

const CONNECTIONS: usize = 40;
const DOCS_EACH: usize = 50;

/// One connection: joins its documents one after another, writes one
/// update to each and waits for its ack; returns how many were acked.
async fn writer(url: String, c: usize) -> usize {
    let (mut ws, _) = tokio_tungstenite::connect_async(&url)
        .await
        .expect("connect");
    let mut acked = 0;
    for d in 0..DOCS_EACH {
        let doc = format!("c{c}-d{d}");
        let join = ClientMessage::Join {
            doc: doc.clone(),
            token: String::new(),
            epoch: None,
            version: VersionVector::new(),
        };
        ws.send(Message::Binary(join.encode())).await.expect("send");
        let mut local = Doc::new();
        local.set_peer_id((c * DOCS_EACH + d + 1) as u64).unwrap();
        local.text("t").insert(0, &doc).unwrap();
        let update = local
            .export(ExportMode::Updates {
                from: &VersionVector::new(),
            })
            .unwrap();
        let mut sent = false;
        loop {
            let m = tokio::time::timeout(Duration::from_secs(60), ws.next())
                .await
                .expect("the server answers");
            let Some(Ok(Message::Binary(b))) = m else {
                continue;
            };
            match ServerMessage::decode(&b).expect("parses") {
                ServerMessage::Synced { .. } if !sent => {
                    let u = ClientMessage::Update {
                        doc: doc.clone(),
                        batch: d as u64,
                        update: update.clone(),
                    };
                    ws.send(Message::Binary(u.encode())).await.expect("send");
                    sent = true;
                }
                ServerMessage::Ack { status, .. } => {
                    assert_eq!(status, Status::Ok);
                    acked += 1;
                    break;
                }
                ServerMessage::Refused {
                    status, message, ..
                } => {
                    panic!("{doc}: refused {status}: {message}")
                }
                _ => {}
            }
        }
    }
    let _ = ws.close(None).await;
    acked
}

#[test]
fn one_server_holds_thousands_of_documents_and_reloads_idle_ones() {
    let dir = TempDir::new("sync-many");
    let path = dir.path().join("docs.db");
    let server = ServerProcess::start(&[
        "--db".into(),
        path.display().to_string(),
        "--idle-unload-ms".into(),
        "500".into(),
    ]);
    let base = server.rss_kib();
    let url = server.url();
    let started = Instant::now();
    let acked: usize = runtime().block_on(async {
        let tasks: Vec<_> = (0..CONNECTIONS)
            .map(|c| tokio::spawn(writer(url.clone(), c)))
            .collect();
        let mut total = 0;
        for t in tasks {
            total += t.await.expect("writer");
        }
        total
    });
    let loaded = server.rss_kib();
    assert_eq!(acked, CONNECTIONS * DOCS_EACH);
    eprintln!(
        "{} documents joined and written in {:.1} s; server RSS {base} KiB at start, {loaded} KiB \
         with all loaded ({:.1} KiB per document)",
        CONNECTIONS * DOCS_EACH,
        started.elapsed().as_secs_f64(),
        (loaded - base) as f64 / (CONNECTIONS * DOCS_EACH) as f64
    );
    // Idle (unloaded after 500 ms), then joined again: each comes back
    // from the store with its text.
    std::thread::sleep(Duration::from_millis(1500));
    runtime().block_on(async {
        let (mut ws, _) = tokio_tungstenite::connect_async(&url)
            .await
            .expect("connect");
        for c in (0..CONNECTIONS).step_by(7) {
            let doc = format!("c{c}-d{}", c % DOCS_EACH);
            let join = ClientMessage::Join {
                doc: doc.clone(),
                token: String::new(),
                epoch: None,
                version: VersionVector::new(),
            };
            ws.send(Message::Binary(join.encode())).await.expect("send");
            let mut local = Doc::new();
            loop {
                let Some(Ok(Message::Binary(b))) = ws.next().await else {
                    continue;
                };
                match ServerMessage::decode(&b).expect("parses") {
                    ServerMessage::Updates { updates, .. } => {
                        for u in updates {
                            local.import(&u).expect("import");
                        }
                    }
                    ServerMessage::Synced { .. } => break,
                    _ => {}
                }
            }
            assert_eq!(local.text("t").to_string(), doc);
        }
    });
    let store = open_sqlite(&path);
    let docs = store.list().unwrap();
    assert_eq!(docs.len(), CONNECTIONS * DOCS_EACH);
    for info in docs.iter().step_by(97) {
        let text = store
            .read(&info.id, |d| d.get_text("t").unwrap().to_string())
            .unwrap();
        assert_eq!(text, info.id);
    }
}
