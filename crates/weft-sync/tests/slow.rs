//! Backpressure: a client that joins and never reads. The server's
//! queue for it fills, it is disconnected with `TooSlow`, the server's
//! memory stays bounded, and the others keep syncing.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use weft::VersionVector;
use weft_sync::protocol::{ClientMessage, ServerMessage};
use weft_sync::Status;

use crate::common::TempDir;
use crate::harness::{runtime, Editor, ServerProcess};

// 8 MB relayed: more than the loopback socket buffers (4 MB to send, a
// small receive window for a reader that never reads) and the server's
// writer buffer (2 x 64 KiB messages) hold.
const UPDATES: usize = 4_000;
const UPDATE_BYTES: usize = 2_000;

/// Types `UPDATES` updates through a server, with a client that never
/// reads joined or not; returns the growth of the server's memory (KiB)
/// and whether the slow client was disconnected.
fn run(with_slow_client: bool) -> (u64, bool) {
    let dir = TempDir::new("sync-slow");
    let path = dir.path().join("docs.db");
    let server = ServerProcess::start(&[
        "--db".into(),
        path.display().to_string(),
        "--outgoing-queue".into(),
        "32".into(),
        "--max-message".into(),
        "65536".into(),
        "--updates-per-second".into(),
        "1000000".into(),
        "--update-burst".into(),
        "1000000".into(),
    ]);
    let url = server.url();
    let rt = runtime();
    rt.block_on(async {
        let mut writer = Editor::new(1, "doc", &url);
        let mut reader = Editor::new(2, "doc", &url);
        writer.connect();
        reader.connect();
        assert!(
            reader
                .client
                .as_ref()
                .unwrap()
                .wait_for(Duration::from_secs(20), |s| s.access.is_some())
                .await
        );
        // The slow client: joins, then never reads again.
        let (mut slow, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        if with_slow_client {
            let join = ClientMessage::Join {
                doc: "doc".into(),
                token: String::new(),
                epoch: None,
                version: VersionVector::new(),
            };
            slow.send(Message::Binary(join.encode())).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let rss_before = server.rss_kib();

        let chunk: String = "x".repeat(UPDATE_BYTES - 10);
        let mut lags = Vec::new();
        for i in 0..UPDATES {
            {
                let mut doc = writer.doc.lock().unwrap();
                let len = doc.text("t").len();
                doc.text("t")
                    .insert(len, &format!("{i:06}{chunk}\n"))
                    .unwrap();
                doc.commit();
            }
            if i % 100 == 99 {
                // How far behind the reader is (it must keep up).
                let sent = Instant::now();
                let target = writer.doc.lock().unwrap().version();
                while !reader.doc.lock().unwrap().version().includes_all(&target) {
                    assert!(
                        sent.elapsed() < Duration::from_secs(30),
                        "the reader stalled"
                    );
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                lags.push(sent.elapsed());
            }
        }
        let w = writer.client.as_ref().unwrap();
        assert!(w.wait_synced(Duration::from_secs(60)).await);
        let rss_after = server.rss_kib();
        lags.sort();
        eprintln!(
            "slow client {with_slow_client}: server RSS {rss_before} KiB before, {rss_after} KiB \
             after {} MB relayed; reader lag median {:?}, max {:?}",
            UPDATES * UPDATE_BYTES / 1_000_000,
            lags[lags.len() / 2],
            lags[lags.len() - 1]
        );
        // The slow client finds, after what the kernel buffered, an error
        // saying why, or the closed connection.
        let mut disconnected = false;
        if with_slow_client {
            loop {
                match tokio::time::timeout(Duration::from_secs(20), slow.next()).await {
                    Ok(Some(Ok(Message::Binary(b)))) => {
                        if let Ok(ServerMessage::Error { status, .. }) = ServerMessage::decode(&b) {
                            assert_eq!(status, Status::TooSlow);
                        }
                    }
                    Ok(Some(Ok(_))) => {}
                    Ok(Some(Err(_)) | None) => {
                        disconnected = true;
                        break;
                    }
                    Err(_) => break,
                }
            }
        }
        writer.disconnect().await;
        reader.disconnect().await;
        (rss_after.saturating_sub(rss_before), disconnected)
    })
}

#[test]
fn a_client_that_never_reads_is_disconnected_and_costs_bounded_memory() {
    let (with_slow, disconnected) = run(true);
    assert!(disconnected, "the slow client was not disconnected");
    // The same load without it: the document's own growth (its text and
    // history in the store's cache, SQLite's pages).
    let (without, _) = run(false);
    // What the slow client may cost: its queue (32 messages of at most
    // 64 KiB) and the socket writer's buffer, 2.4 MiB; a server buffering
    // for it would hold all 8 MB relayed.
    assert!(
        with_slow < without + 6 * 1024,
        "server memory grew by {with_slow} KiB with the slow client, {without} KiB without"
    );
}
