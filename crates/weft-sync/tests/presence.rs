//! Presence: carried to the other clients of a document, sent to clients
//! that join later, and removed at once when its connection drops.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use weft::{Doc, EphemeralStore};
use weft_sync::{ClientOptions, SyncClient};

use crate::common::TempDir;
use crate::harness::{runtime, sqlite_args, ServerProcess};

async fn until(what: &str, f: impl Fn() -> bool) {
    for _ in 0..400 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

#[test]
fn presence_reaches_others_and_leaves_with_its_connection() {
    let dir = TempDir::new("sync-presence");
    let server = ServerProcess::start(&sqlite_args(&dir.path().join("docs.db")));
    let url = server.url();
    runtime().block_on(async {
        let start = |presence: &Arc<EphemeralStore>| {
            SyncClient::start(
                &url,
                "doc",
                Arc::new(Mutex::new(Doc::new())),
                ClientOptions::new("").presence(Arc::clone(presence)),
            )
        };
        let pa = Arc::new(EphemeralStore::new(30_000));
        let pb = Arc::new(EphemeralStore::new(30_000));
        let a = start(&pa);
        let b = start(&pb);
        assert!(a.wait_synced(Duration::from_secs(20)).await);
        assert!(b.wait_synced(Duration::from_secs(20)).await);
        pa.set("user/a", "caret 3");
        until("b to see a's caret", || pb.get("user/a").is_some()).await;
        pb.set("user/b", "caret 7");
        until("a to see b's caret", || pa.get("user/b").is_some()).await;

        // A client joining later gets the presence already there.
        let pc = Arc::new(EphemeralStore::new(30_000));
        let c = start(&pc);
        until("c to see both", || {
            pc.get("user/a").is_some() && pc.get("user/b").is_some()
        })
        .await;

        // A's connection drops (no goodbye): its caret goes at once, far
        // sooner than the 30 s timeout.
        drop(a);
        until("b to lose a's caret", || pb.get("user/a").is_none()).await;
        until("c to lose a's caret", || pc.get("user/a").is_none()).await;
        assert!(pc.get("user/b").is_some(), "b's caret stays");
        b.close().await;
        c.close().await;
    });
}
