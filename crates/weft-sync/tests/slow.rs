//! Backpressure: a client that joins and never reads. The server's
//! queue for it fills, it is disconnected with `TooSlow`, the server's
//! memory stays bounded, and the others keep up.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use weft::{Doc, EphemeralStore, VersionVector};
use weft_sync::protocol::{ClientMessage, ServerMessage};
use weft_sync::{ClientOptions, Status, SyncClient};

use crate::common::TempDir;
use crate::harness::{runtime, ServerProcess};

// 40 MB relayed: far more than the loopback socket buffers (4 MB to send,
// a small receive window for a reader that never reads) and the server's
// writer buffer (2 x 64 KiB messages) hold.
const MESSAGES: usize = 10_000;
const MESSAGE_BYTES: usize = 4_000;

/// Relays about 40 MB through a server (presence messages, so that the
/// document does not grow), with a client that never reads joined or not;
/// returns the growth of the server's memory (KiB) and whether the slow
/// client was disconnected.
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
        let start = |presence: &Arc<EphemeralStore>, peer: u64| {
            let mut doc = Doc::new();
            doc.set_peer_id(peer).unwrap();
            SyncClient::start(
                &url,
                "doc",
                Arc::new(Mutex::new(doc)),
                ClientOptions::new("").presence(Arc::clone(presence)),
            )
        };
        let pw = Arc::new(EphemeralStore::new(60_000));
        let pr = Arc::new(EphemeralStore::new(60_000));
        let writer = start(&pw, 1);
        let reader = start(&pr, 2);
        assert!(writer.wait_synced(Duration::from_secs(20)).await);
        assert!(reader.wait_synced(Duration::from_secs(20)).await);
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

        let chunk: String = "x".repeat(MESSAGE_BYTES);
        let mut lags = Vec::new();
        for i in 0..MESSAGES {
            pw.set("user/w", format!("{i:06}{chunk}"));
            if i % 500 == 499 {
                // How far behind the reader is (it must keep up).
                let sent = Instant::now();
                let want = format!("{i:06}");
                loop {
                    let seen = pr.get("user/w").map(|v| format!("{v:?}"));
                    if seen.is_some_and(|v| v.contains(&want)) {
                        break;
                    }
                    assert!(
                        sent.elapsed() < Duration::from_secs(30),
                        "the reader stalled"
                    );
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                lags.push(sent.elapsed());
            } else if i % 16 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let rss_after = server.rss_kib();
        lags.sort();
        eprintln!(
            "slow client {with_slow_client}: server RSS {rss_before} KiB before, {rss_after} KiB \
             after {} MB sent; reader lag median {:?}, max {:?}",
            MESSAGES * MESSAGE_BYTES / 1_000_000,
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
        writer.close().await;
        reader.close().await;
        (rss_after.saturating_sub(rss_before), disconnected)
    })
}

#[test]
fn a_client_that_never_reads_is_disconnected_and_costs_bounded_memory() {
    let (with_slow, disconnected) = run(true);
    assert!(disconnected, "the slow client was not disconnected");
    let (without, _) = run(false);
    // What the slow client may cost: its queue (32 messages of at most
    // 64 KiB) and the socket writer's buffer, about 2.4 MiB; a server
    // buffering for it would hold the 40 MB sent.
    assert!(
        with_slow < without + 16 * 1024,
        "server memory grew by {with_slow} KiB with the slow client, {without} KiB without"
    );
}
