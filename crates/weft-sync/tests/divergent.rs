//! Divergent history: a document deleted and created again while a client
//! is offline; on reconnect the client is refused with the reason and its
//! content is not merged.

use std::time::Duration;

use weft_sync::{Connection, Status};

use crate::common::{Rng, TempDir};
use crate::harness::{open_sqlite, runtime, sqlite_args, Editor, ServerProcess};

#[test]
fn a_client_of_a_recreated_document_is_refused_and_nothing_is_merged() {
    let dir = TempDir::new("sync-divergent");
    let path = dir.path().join("docs.db");
    let mut server = ServerProcess::start(&sqlite_args(&path));
    let rt = runtime();
    let mut rng = Rng::new(7);
    let mut old = Editor::new(1, "notes", &server.url());
    rt.block_on(async {
        old.connect();
        for i in 0..20 {
            old.edit(&mut rng, &format!("old{i} "));
        }
        assert!(
            old.client
                .as_ref()
                .unwrap()
                .wait_synced(Duration::from_secs(20))
                .await
        );
        old.disconnect().await;
    });
    let old_epoch = old.epoch.expect("the client learned the epoch");
    {
        let mut doc = old.doc.lock().unwrap();
        doc.text("t").insert(0, "offline ").unwrap();
        doc.commit();
    }
    // Deleted and created again while the client is away.
    server.kill();
    {
        let store = open_sqlite(&path);
        store.delete("notes").unwrap();
        let new_epoch = store.create("notes").unwrap();
        assert_ne!(new_epoch.0, old_epoch);
    }
    server.restart();
    let mut fresh = Editor::new(2, "notes", &server.url());
    fresh.url = server.url();
    old.url = server.url();
    rt.block_on(async {
        fresh.connect();
        {
            let mut doc = fresh.doc.lock().unwrap();
            doc.text("t").insert(0, "new life").unwrap();
            doc.commit();
        }
        let fc = fresh.client.as_ref().unwrap();
        assert!(fc.wait_synced(Duration::from_secs(20)).await);

        old.connect();
        let oc = old.client.as_ref().unwrap();
        let refused = oc
            .wait_for(Duration::from_secs(20), |s| {
                matches!(s.connection, Connection::Refused { .. })
            })
            .await;
        assert!(refused, "state: {:?}", oc.state());
        match oc.state().connection {
            Connection::Refused { status, message } => {
                assert_eq!(status, Status::DivergentHistory);
                assert!(message.contains("epoch"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // Nothing of the old history reached the new document, or the
        // fresh client.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(fresh.doc.lock().unwrap().text("t").to_string(), "new life");
        fresh.disconnect().await;
        old.disconnect().await;
    });
    let store = open_sqlite(&path);
    let stored = store
        .read("notes", |d| {
            (d.get_text("t").unwrap().to_string(), d.version())
        })
        .unwrap();
    assert_eq!(stored.0, "new life");
    assert_eq!(stored.1.get(1), 0, "no op of the refused client was stored");
    // The refused client keeps its own document untouched.
    assert!(old
        .doc
        .lock()
        .unwrap()
        .text("t")
        .to_string()
        .starts_with("offline "));
}
