//! Hostile clients: malformed and oversized messages, updates that fail
//! import, wrong epochs, writes without permission, floods. Each gets its
//! status or a closed connection (docs/PROTOCOL.md); the document is
//! unchanged by them and a well-behaved client beside them is unaffected.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use weft::{Doc, ExportMode, VersionVector};
use weft_sync::protocol::{ClientMessage, ServerMessage};
use weft_sync::{Access, Status};

use crate::common::TempDir;
use crate::harness::{open_sqlite, runtime, Editor, ServerProcess};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn raw(url: &str) -> Ws {
    tokio_tungstenite::connect_async(url)
        .await
        .expect("connect")
        .0
}

async fn send(ws: &mut Ws, m: &ClientMessage) {
    ws.send(Message::Binary(m.encode())).await.expect("send");
}

/// The next server message; `None` once the connection is closed.
async fn next(ws: &mut Ws) -> Option<ServerMessage> {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("the server answers within 20 s");
        match m {
            Some(Ok(Message::Binary(b))) => {
                return Some(ServerMessage::decode(&b).expect("the server's messages parse"))
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
            Some(Ok(other)) => panic!("unexpected {other:?}"),
        }
    }
}

/// Expects an error with `status`, then the connection closed.
async fn expect_error_and_close(ws: &mut Ws, status: Status) {
    match next(ws).await {
        Some(ServerMessage::Error { status: s, .. }) => assert_eq!(s, status),
        other => panic!("expected an error {status:?}, got {other:?}"),
    }
    assert_eq!(next(ws).await, None, "the connection closes");
}

fn join(doc: &str, token: &str, epoch: Option<u128>) -> ClientMessage {
    ClientMessage::Join {
        doc: doc.into(),
        token: token.into(),
        epoch,
        version: VersionVector::new(),
    }
}

/// Joins and reads up to `Synced`; returns the access.
async fn joined(ws: &mut Ws, doc: &str, token: &str) -> Access {
    send(ws, &join(doc, token, None)).await;
    let access = match next(ws).await {
        Some(ServerMessage::Joined { access, .. }) => access,
        other => panic!("expected Joined, got {other:?}"),
    };
    loop {
        match next(ws).await {
            Some(ServerMessage::Synced { .. }) => return access,
            Some(_) => {}
            None => panic!("closed while syncing"),
        }
    }
}

fn update_of(peer: u64, text: &str) -> Vec<u8> {
    let mut d = Doc::new();
    d.set_peer_id(peer).unwrap();
    d.text("t").insert(0, text).unwrap();
    d.export(ExportMode::Updates {
        from: &VersionVector::new(),
    })
    .unwrap()
}

/// The next ack (relays and presence before it are skipped).
async fn ack(ws: &mut Ws) -> (u64, Status) {
    loop {
        match next(ws).await {
            Some(ServerMessage::Ack { batch, status, .. }) => return (batch, status),
            Some(_) => {}
            None => panic!("closed while waiting for an ack"),
        }
    }
}

#[test]
fn hostile_clients_get_their_status_and_change_nothing() {
    let dir = TempDir::new("sync-hostile");
    let path = dir.path().join("docs.db");
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "good write\nflood write\nreader read\n").unwrap();
    let server = ServerProcess::start(&[
        "--db".into(),
        path.display().to_string(),
        "--tokens".into(),
        tokens.display().to_string(),
        "--max-message".into(),
        "65536".into(),
        "--updates-per-second".into(),
        "20".into(),
        "--update-burst".into(),
        "20".into(),
    ]);
    let url = server.url();
    let rt = runtime();
    rt.block_on(async {
        // A well-behaved client, typing throughout.
        let mut good = Editor::new(1, "doc", &url);
        good.token = "good".into();
        good.connect();
        let good = &mut good;
        let type_some = |good: &mut Editor, n: usize, tag: &str| {
            for i in 0..n {
                let mut d = good.doc.lock().unwrap();
                let len = d.text("t").len();
                d.text("t").insert(len, &format!("{tag}{i} ")).unwrap();
                d.commit();
            }
        };
        type_some(good, 5, "a");

        // Malformed, wrong version, text frames: an error, then closed.
        let mut ws = raw(&url).await;
        ws.send(Message::Binary(vec![1, 99, 1, 2])).await.unwrap();
        expect_error_and_close(&mut ws, Status::Malformed).await;
        let mut ws = raw(&url).await;
        ws.send(Message::Binary(vec![9, 1])).await.unwrap();
        expect_error_and_close(&mut ws, Status::UnsupportedVersion).await;
        let mut ws = raw(&url).await;
        ws.send(Message::Text("hello".into())).await.unwrap();
        expect_error_and_close(&mut ws, Status::Malformed).await;
        // Oversized: larger than --max-message.
        let mut ws = raw(&url).await;
        let _ = ws.send(Message::Binary(vec![1u8; 70_000])).await;
        match next(&mut ws).await {
            Some(ServerMessage::Error { status, .. }) => {
                assert_eq!(status, Status::TooLarge);
                assert_eq!(next(&mut ws).await, None);
            }
            None => {} // closed at once is documented too
            other => panic!("{other:?}"),
        }
        type_some(good, 5, "b");

        // Unknown token, wrong epoch: refused, connection kept.
        let mut ws = raw(&url).await;
        send(&mut ws, &join("doc", "nobody", None)).await;
        assert!(matches!(
            next(&mut ws).await,
            Some(ServerMessage::Refused {
                status: Status::Forbidden,
                ..
            })
        ));
        send(&mut ws, &join("doc", "good", Some(12345))).await;
        assert!(matches!(
            next(&mut ws).await,
            Some(ServerMessage::Refused {
                status: Status::DivergentHistory,
                ..
            })
        ));
        // An update before joining.
        send(
            &mut ws,
            &ClientMessage::Update {
                doc: "doc".into(),
                batch: 1,
                update: update_of(66, "x"),
            },
        )
        .await;
        assert_eq!(ack(&mut ws).await, (1, Status::NotJoined));

        // Bytes that do not import: invalid, nothing stored or relayed.
        assert_eq!(joined(&mut ws, "doc", "good").await, Access::Write);
        let mut bad = update_of(66, "forged");
        let n = bad.len();
        bad[n / 2] ^= 0x55;
        for (batch, bytes) in [(2u64, bad), (3, vec![0u8; 40]), (4, Vec::new())] {
            send(
                &mut ws,
                &ClientMessage::Update {
                    doc: "doc".into(),
                    batch,
                    update: bytes,
                },
            )
            .await;
            assert_eq!(ack(&mut ws).await, (batch, Status::Invalid));
        }
        // Presence bytes that do not decode: an error, then closed.
        send(
            &mut ws,
            &ClientMessage::Presence {
                doc: "doc".into(),
                bytes: vec![0xff; 9],
            },
        )
        .await;
        loop {
            match next(&mut ws).await {
                Some(ServerMessage::Error { status, .. }) => {
                    assert_eq!(status, Status::Malformed);
                    break;
                }
                Some(_) => {}
                None => break,
            }
        }

        // A read-only token: joins, but its writes are forbidden.
        let mut ws = raw(&url).await;
        assert_eq!(joined(&mut ws, "doc", "reader").await, Access::Read);
        send(
            &mut ws,
            &ClientMessage::Update {
                doc: "doc".into(),
                batch: 7,
                update: update_of(77, "read-only write"),
            },
        )
        .await;
        assert_eq!(ack(&mut ws).await, (7, Status::Forbidden));

        // A flood: beyond the burst, updates are rate limited, not stored.
        let mut ws = raw(&url).await;
        assert_eq!(joined(&mut ws, "doc", "flood").await, Access::Write);
        let mut flood = Doc::new();
        flood.set_peer_id(88).unwrap();
        let mut from = VersionVector::new();
        for batch in 0..200u64 {
            flood.text("f").insert(0, "z").unwrap();
            let bytes = flood.export(ExportMode::Updates { from: &from }).unwrap();
            from = flood.version();
            send(
                &mut ws,
                &ClientMessage::Update {
                    doc: "doc".into(),
                    batch,
                    update: bytes,
                },
            )
            .await;
        }
        let mut limited = 0;
        let mut ok = 0;
        for _ in 0..200 {
            match ack(&mut ws).await.1 {
                Status::Ok => ok += 1,
                Status::RateLimited => limited += 1,
                other => panic!("{other:?}"),
            }
        }
        assert!(limited >= 100, "{ok} ok, {limited} rate limited");
        type_some(good, 5, "c");

        let client = good.client.as_ref().unwrap();
        assert!(
            client.wait_synced(Duration::from_secs(30)).await,
            "{:?}",
            client.state()
        );
        let text = good.doc.lock().unwrap().text("t").to_string();
        for tag in ["a0 ", "b4 ", "c4 "] {
            assert!(text.contains(tag), "{text}");
        }
        good.disconnect().await;
    });
    let store = open_sqlite(&path);
    let (text, version) = store
        .read("doc", |d| {
            (d.get_text("t").unwrap().to_string(), d.version())
        })
        .unwrap();
    assert!(
        !text.contains("forged") && !text.contains("read-only"),
        "{text}"
    );
    assert_eq!(version.get(66), 0, "no invalid update was stored");
    assert_eq!(version.get(77), 0, "no read-only write was stored");
}
