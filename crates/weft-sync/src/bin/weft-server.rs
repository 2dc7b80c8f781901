//! `weft-server`: a sync server on an embedded SQLite store or on
//! PostgreSQL.
//!
//! ```text
//! weft-server --db docs.db --listen 127.0.0.1:8080
//! weft-server --postgres "host=/run/postgresql user=weft dbname=weft" --listen 127.0.0.1:8081
//! ```
//!
//! Prints `listening on ws://ADDR` once it accepts connections.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use weft_store::{Store, StoreOptions};
use weft_sync::{AllowAll, Authorize, Server, ServerOptions, TokenFile};

const USAGE: &str =
    "usage: weft-server (--db FILE | --postgres CONFIG) [--listen ADDR] [--tokens FILE]
    [--max-message BYTES] [--updates-per-second N] [--update-burst N]
    [--max-documents N] [--outgoing-queue N] [--idle-unload-ms MS] [--keepalive-ms MS]
    [--static DIR] [--exit-with-stdin]

  --db FILE           an SQLite store (created if missing)
  --postgres CONFIG   a PostgreSQL store (several servers may share it)
  --listen ADDR       where to accept WebSocket connections (default 127.0.0.1:8080)
  --tokens FILE       lines `TOKEN read|write [DOC_PREFIX]`; without it anyone may write
  --static DIR        also serve the files of DIR to plain HTTP GETs on the same port
                      (a web editor: weft-server --db d.sqlite --static web/dist)
  --exit-with-stdin   exit when standard input closes (the server dies with a supervisor
                      that holds the pipe, even one killed with -9)";

fn main() {
    if let Err(e) = run() {
        eprintln!("weft-server: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut db = None;
    let mut postgres = None;
    let mut listen = "127.0.0.1:8080".to_owned();
    let mut tokens = None;
    let mut options = ServerOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        let number = |s: String, name: &str| {
            s.parse::<u64>()
                .map_err(|_| format!("{name}: not a number: {s}"))
        };
        match arg.as_str() {
            "--db" => db = Some(value("--db")?),
            "--postgres" => postgres = Some(value("--postgres")?),
            "--listen" => listen = value("--listen")?,
            "--tokens" => tokens = Some(value("--tokens")?),
            "--max-message" => {
                options.max_message = number(value(&arg)?, &arg)? as usize;
            }
            "--updates-per-second" => {
                options.updates_per_second = number(value(&arg)?, &arg)? as u32;
            }
            "--update-burst" => options.update_burst = number(value(&arg)?, &arg)? as u32,
            "--max-documents" => {
                options.max_documents_per_connection = number(value(&arg)?, &arg)? as usize;
            }
            "--outgoing-queue" => options.outgoing_queue = number(value(&arg)?, &arg)? as usize,
            "--idle-unload-ms" => {
                options.idle_unload = Duration::from_millis(number(value(&arg)?, &arg)?);
            }
            "--keepalive-ms" => {
                options.keepalive = Duration::from_millis(number(value(&arg)?, &arg)?.max(10));
            }
            "--static" => options.static_dir = Some(value(&arg)?.into()),
            "--exit-with-stdin" => {
                std::thread::spawn(|| {
                    let mut sink = Vec::new();
                    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
                    std::process::exit(0);
                });
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let auth: Arc<dyn Authorize> = match tokens {
        Some(path) => Arc::new(TokenFile::read(&path).map_err(|e| format!("{path}: {e}"))?),
        None => Arc::new(AllowAll),
    };
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let (store, shared) = match (db, postgres) {
            (Some(path), None) => (
                Store::open_sqlite(&path, StoreOptions::new())
                    .map_err(|e| format!("{path}: {e}"))?,
                None,
            ),
            (None, Some(config)) => {
                let store = tokio::task::spawn_blocking({
                    let config = config.clone();
                    move || Store::connect_postgres(&config, StoreOptions::new())
                })
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
                (store, Some(config))
            }
            _ => return Err(format!("give one of --db and --postgres\n{USAGE}")),
        };
        let server = Server::new(Arc::new(store), auth, options);
        if let Some(config) = shared {
            server
                .share_over_postgres(&config)
                .map_err(|e| e.to_string())?;
        }
        let (addr, task) = server
            .spawn(&listen)
            .await
            .map_err(|e| format!("{listen}: {e}"))?;
        println!("listening on ws://{addr}");
        let _ = std::io::stdout().flush();
        tokio::select! {
            r = task => match r {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            },
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    })
}
