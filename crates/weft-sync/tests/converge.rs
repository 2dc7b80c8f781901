//! Convergence: 32 clients on 8 documents type, mark, undo and disconnect
//! at random through one server on SQLite, and through three servers on
//! one PostgreSQL database; at quiescence every client equals the stored
//! document (text deltas with marks, the map, the version).

use std::time::Duration;

use weft_store::{Store, StoreOptions};

use crate::common::{seed, Rng, TempDir};
use crate::harness::{open_sqlite, runtime, sqlite_args, wait_converged, Editor, ServerProcess};
use crate::pg::PgServer;

const CLIENTS: usize = 32;
const DOCS: usize = 8;
const STEPS: usize = 1_200;

/// Random edits by `CLIENTS` editors spread over `urls`, with disconnects.
async fn random_run(urls: &[String], store: &Store, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut editors: Vec<Editor> = (0..CLIENTS)
        .map(|i| {
            Editor::new(
                100 + i as u64,
                &format!("doc{}", i % DOCS),
                &urls[i % urls.len()],
            )
        })
        .collect();
    for e in &mut editors {
        e.connect();
    }
    for step in 0..STEPS {
        let i = rng.below(CLIENTS as u64) as usize;
        let e = &mut editors[i];
        if rng.below(40) == 0 {
            if e.client.is_some() {
                e.disconnect().await;
            } else {
                e.connect();
            }
        } else {
            e.edit(&mut rng, &format!("w{step} "));
        }
        if step % 16 == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    for e in &mut editors {
        e.connect();
    }
    wait_converged(&editors, store, Duration::from_secs(90)).await;
    for e in &mut editors {
        e.disconnect().await;
    }
}

#[test]
fn clients_converge_through_one_server_on_sqlite() {
    let dir = TempDir::new("sync-converge");
    let path = dir.path().join("docs.db");
    let server = ServerProcess::start(&sqlite_args(&path));
    let store = open_sqlite(&path);
    runtime().block_on(random_run(
        &[server.url()],
        &store,
        seed("clients_converge_through_one_server_on_sqlite"),
    ));
}

#[test]
fn clients_converge_through_three_servers_on_one_postgres() {
    let pg = PgServer::start();
    let db = pg.new_database();
    let config = pg.config(&db);
    let args = vec!["--postgres".to_owned(), config.clone()];
    let servers: Vec<ServerProcess> = (0..3).map(|_| ServerProcess::start(&args)).collect();
    let urls: Vec<String> = servers.iter().map(ServerProcess::url).collect();
    let store = Store::connect_postgres(&config, StoreOptions::new().cache_bytes(0))
        .expect("connect to the servers' database");
    runtime().block_on(random_run(
        &urls,
        &store,
        seed("clients_converge_through_three_servers_on_one_postgres"),
    ));
}
