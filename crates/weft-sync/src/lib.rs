//! A WebSocket sync server and client for [`weft`] documents.
//!
//! - The **server** ([`Server`], and the `weft-server` binary) keeps
//!   documents in a [`weft_store::Store`] (SQLite embedded, or PostgreSQL
//!   for several servers). It acknowledges an update only once it is
//!   durable, relays it only after that, refuses updates that do not
//!   import, and refuses a client whose document history is not the
//!   server's ([`Status::DivergentHistory`]) instead of merging the two.
//! - The **client** ([`SyncClient`]) keeps a shared [`weft::Doc`] in sync
//!   with one server document: sends local commits in numbered batches,
//!   reconnects with backoff, resends whatever the server lacks, and
//!   carries presence ([`weft::EphemeralStore`]).
//! - The **protocol** ([`protocol`], `docs/PROTOCOL.md`) is binary
//!   WebSocket messages with a version byte.
//!
//! # Examples
//!
//! A server on an embedded store, and two clients that converge:
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//! use weft::Doc;
//! use weft_store::{Store, StoreOptions};
//! use weft_sync::{AllowAll, ClientOptions, Server, ServerOptions, SyncClient};
//!
//! # let dir = std::env::temp_dir().join(format!("weft-sync-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let path = dir.join("docs.db");
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! runtime.block_on(async {
//!     let store = Store::open_sqlite(&path, StoreOptions::new())?;
//!     let server = Server::new(Arc::new(store), Arc::new(AllowAll), ServerOptions::default());
//!     let (addr, _task) = server.spawn("127.0.0.1:0").await?;
//!     let url = format!("ws://{addr}");
//!
//!     let alice = Arc::new(Mutex::new(Doc::new()));
//!     let bob = Arc::new(Mutex::new(Doc::new()));
//!     let a = SyncClient::start(&url, "notes", Arc::clone(&alice), ClientOptions::new(""));
//!     let b = SyncClient::start(&url, "notes", Arc::clone(&bob), ClientOptions::new(""));
//!     {
//!         let mut doc = alice.lock().unwrap();
//!         doc.text("t").insert(0, "Hello")?;
//!         doc.commit(); // sent now; acknowledged once durable
//!     }
//!     assert!(a.wait_synced(Duration::from_secs(10)).await);
//!     for _ in 0..200 {
//!         if bob.lock().unwrap().text("t").to_string() == "Hello" {
//!             break;
//!         }
//!         tokio::time::sleep(Duration::from_millis(10)).await;
//!     }
//!     assert_eq!(bob.lock().unwrap().text("t").to_string(), "Hello");
//!     a.close().await;
//!     b.close().await;
//!     Ok::<(), weft_sync::Error>(())
//! })?;
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), weft_sync::Error>(())
//! ```

mod auth;
mod client;
mod error;
mod files;
#[cfg(feature = "postgres")]
mod notify;
pub mod protocol;
mod server;
pub mod split;

pub use auth::{AllowAll, Authorize, TokenFile};
pub use client::{ClientOptions, Connection, SyncClient, SyncState};
pub use error::{Error, Result};
pub use protocol::{Access, Status};
pub use server::{Server, ServerOptions, ServerStats};
