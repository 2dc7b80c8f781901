//! Crash: kill -9 the server under load and start it again. Every update
//! a client saw acknowledged is in the store, the clients reconnect and
//! resend, all converge, and nothing is duplicated.

use std::time::Duration;

use weft::VersionVector;

use crate::common::{seed, Rng, TempDir};
use crate::harness::{open_sqlite, runtime, sqlite_args, wait_converged, Editor, ServerProcess};

const EDITORS: usize = 8;
const KILLS: usize = 4;

#[test]
fn every_acknowledged_update_survives_kill_9_and_clients_converge() {
    let dir = TempDir::new("sync-crash");
    let path = dir.path().join("docs.db");
    let mut server = ServerProcess::start(&sqlite_args(&path));
    let url = server.url();
    let mut rng = Rng::new(seed(
        "every_acknowledged_update_survives_kill_9_and_clients_converge",
    ));
    let rt = runtime();
    let mut editors: Vec<Editor> = (0..EDITORS)
        .map(|i| Editor::new(10 + i as u64, &format!("doc{}", i % 2), &url))
        .collect();
    let mut words = 0usize;
    // Each editor only inserts words of its own ("e3w17 "), so a word
    // stored twice or lost shows in the text.
    let mut type_for = |editors: &mut Vec<Editor>, rng: &mut Rng, ms: u64| {
        let until = std::time::Instant::now() + Duration::from_millis(ms);
        while std::time::Instant::now() < until {
            let i = rng.below(EDITORS as u64) as usize;
            let e = &mut editors[i];
            let mut doc = e.doc.lock().unwrap();
            // At a word boundary, so words stay whole.
            let text = doc.text("t").to_string();
            let bounds: Vec<usize> = std::iter::once(0)
                .chain(
                    text.chars()
                        .enumerate()
                        .filter(|(_, c)| *c == ' ')
                        .map(|(i, _)| i + 1),
                )
                .collect();
            let at = bounds[rng.below(bounds.len() as u64) as usize];
            doc.text("t").insert(at, &format!("e{i}w{words} ")).unwrap();
            doc.commit();
            words += 1;
            drop(doc);
            std::thread::sleep(Duration::from_micros(300));
        }
    };
    let mut acked_total = 0u64;
    rt.block_on(async {
        for e in &mut editors {
            e.connect();
        }
    });
    for _ in 0..KILLS {
        let ms = 100 + rng.below(400);
        rt.block_on(async { tokio::task::block_in_place(|| type_for(&mut editors, &mut rng, ms)) });
        // What the clients have seen acknowledged (or received) by now.
        let acked: Vec<VersionVector> = editors
            .iter()
            .map(|e| e.client.as_ref().unwrap().state().server_version)
            .collect();
        server.kill();
        // The server is down: the clients keep typing, then it returns.
        rt.block_on(async {
            tokio::task::block_in_place(|| type_for(&mut editors, &mut rng, 100))
        });
        {
            let store = open_sqlite(&path);
            for (e, acked) in editors.iter().zip(&acked) {
                let stored = store.read(&e.doc_id, |d| d.version()).unwrap();
                assert!(
                    stored.includes_all(acked),
                    "{}: acknowledged {acked:?}, stored {stored:?}",
                    e.doc_id
                );
                acked_total += acked.op_count();
            }
        }
        server.restart();
        assert_eq!(server.url(), url, "restarted on the same port");
    }
    let store = open_sqlite(&path);
    rt.block_on(async {
        wait_converged(&editors, &store, Duration::from_secs(90)).await;
        for e in &mut editors {
            e.disconnect().await;
        }
    });
    // Every word typed is in its document exactly once.
    for d in 0..2 {
        let text = store
            .read(&format!("doc{d}"), |doc| {
                doc.get_text("t").unwrap().to_string()
            })
            .unwrap();
        let mut seen = std::collections::HashSet::new();
        for w in text.split_whitespace() {
            assert!(seen.insert(w.to_owned()), "{w} twice");
        }
    }
    let total: usize = (0..2)
        .map(|d| {
            store
                .read(&format!("doc{d}"), |doc| {
                    doc.get_text("t")
                        .unwrap()
                        .to_string()
                        .split_whitespace()
                        .count()
                })
                .unwrap()
        })
        .sum();
    assert_eq!(total, words, "every word typed is stored once");
    eprintln!("{KILLS} kills, {words} words typed, {acked_total} acknowledged ops checked");
}
