//! Server processes, random editing clients, and comparisons with the store.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weft::{Doc, UndoManager};
use weft_store::{Store, StoreOptions};
use weft_sync::{ClientOptions, SyncClient};

use crate::common::Rng;

/// A `weft-server` process.
pub struct ServerProcess {
    child: Child,
    args: Vec<String>,
    /// Its address, `127.0.0.1:PORT`.
    pub addr: String,
}

impl ServerProcess {
    /// Starts `weft-server` with `args` on a free loopback port.
    pub fn start(args: &[String]) -> ServerProcess {
        ServerProcess::start_on("127.0.0.1:0", args)
    }

    fn start_on(listen: &str, args: &[String]) -> ServerProcess {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut child = Command::new(env!("CARGO_BIN_EXE_weft-server"))
                .args(args)
                .args(["--listen", listen, "--exit-with-stdin"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start weft-server");
            let mut line = String::new();
            let mut out = BufReader::new(child.stdout.take().expect("piped"));
            let _ = out.read_line(&mut line);
            if let Some(addr) = line.trim().strip_prefix("listening on ws://") {
                return ServerProcess {
                    child,
                    args: args.to_vec(),
                    addr: addr.to_owned(),
                };
            }
            let _ = child.kill();
            let _ = child.wait();
            // The old process's port may linger a moment after a kill.
            assert!(
                Instant::now() < deadline,
                "weft-server did not start: {line}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again on the same address and arguments.
    pub fn restart(&mut self) {
        self.kill();
        let addr = self.addr.clone();
        *self = ServerProcess::start_on(&addr, &self.args.clone());
    }

    /// The resident memory of the process, in KiB.
    pub fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Arguments of a server on the SQLite file `path`.
pub fn sqlite_args(path: &std::path::Path) -> Vec<String> {
    vec!["--db".into(), path.display().to_string()]
}

/// One editing client: its document, undo manager and connection.
pub struct Editor {
    pub doc_id: String,
    pub doc: Arc<Mutex<Doc>>,
    pub undo: UndoManager,
    pub client: Option<SyncClient>,
    pub epoch: Option<u128>,
    pub url: String,
    pub token: String,
}

impl Editor {
    pub fn new(peer: u64, doc_id: &str, url: &str) -> Editor {
        let mut doc = Doc::new();
        doc.set_peer_id(peer).expect("peer id");
        let undo = UndoManager::new(&mut doc);
        Editor {
            doc_id: doc_id.to_owned(),
            doc: Arc::new(Mutex::new(doc)),
            undo,
            client: None,
            epoch: None,
            url: url.to_owned(),
            token: String::new(),
        }
    }

    pub fn connect(&mut self) {
        if self.client.is_none() {
            let options = ClientOptions::new(self.token.clone())
                .epoch(self.epoch)
                .backoff(Duration::from_millis(20), Duration::from_millis(500));
            self.client = Some(SyncClient::start(
                &self.url,
                &self.doc_id,
                Arc::clone(&self.doc),
                options,
            ));
        }
    }

    pub async fn disconnect(&mut self) {
        if let Some(c) = self.client.take() {
            self.epoch = c.state().epoch.or(self.epoch);
            c.close().await;
        }
    }

    /// One random edit (committed): type, delete, mark, set a map key, undo.
    pub fn edit(&mut self, rng: &mut Rng, word: &str) {
        let mut doc = self.doc.lock().unwrap();
        let len = doc.text("t").len();
        match rng.below(10) {
            0..=4 => {
                let at = rng.below(len as u64 + 1) as usize;
                doc.text("t").insert(at, word).unwrap();
            }
            5 if len > 0 => {
                let at = rng.below(len as u64) as usize;
                let n = (1 + rng.below(4) as usize).min(len - at);
                doc.text("t").delete(at, n).unwrap();
            }
            6 if len > 1 => {
                let at = rng.below(len as u64 - 1) as usize;
                let n = (1 + rng.below(6) as usize).min(len - at);
                let value = rng.below(3) != 0;
                doc.text("t").mark(at..at + n, "bold", value).unwrap();
            }
            7 => {
                let key = format!("k{}", rng.below(4));
                doc.map("m").set(&key, word).unwrap();
            }
            8 => {
                let _ = self.undo.undo(&mut doc);
            }
            _ => {
                let len = doc.text("t").len();
                doc.text("t").insert(len, word).unwrap();
            }
        }
        doc.commit();
    }

    /// A comparable picture of the document: text delta, map, version.
    pub fn picture(&self) -> String {
        picture(&self.doc.lock().unwrap())
    }
}

/// Text "t" as a delta, map "m", and the version of `doc`.
pub fn picture(doc: &Doc) -> String {
    let delta = doc.get_text("t").map(|t| t.to_delta()).unwrap_or_default();
    let map = doc
        .get_map("m")
        .map(|m| format!("{:?}", m.iter().collect::<Vec<_>>()))
        .unwrap_or_default();
    format!("{delta:?}\n{map}\n{:?}", doc.version())
}

/// Waits until every editor is synced and equals the stored document.
pub async fn wait_converged(editors: &[Editor], store: &Store, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let mut all = true;
        for e in editors {
            let synced = match &e.client {
                Some(c) => c.is_synced(),
                None => false,
            };
            if !synced {
                all = false;
                break;
            }
        }
        if all {
            let mut same = true;
            for e in editors {
                let stored = tokio::task::block_in_place(|| store.read(&e.doc_id, picture))
                    .expect("read the stored document");
                if stored != e.picture() {
                    same = false;
                    break;
                }
            }
            if same {
                return;
            }
        }
        if Instant::now() > deadline {
            for e in editors {
                let state = e.client.as_ref().map(|c| c.state());
                eprintln!("{} {:?}", e.doc_id, state);
                let stored = tokio::task::block_in_place(|| store.read(&e.doc_id, picture)).ok();
                if stored.as_deref() != Some(&e.picture()) {
                    eprintln!(
                        "client:\n{}\nstore:\n{}",
                        e.picture(),
                        stored.unwrap_or_default()
                    );
                }
            }
            panic!("not converged after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A store on the server's database, for checking (not cached across reads).
pub fn open_sqlite(path: &std::path::Path) -> Store {
    Store::open_sqlite(path, StoreOptions::new().cache_bytes(0)).expect("open the store")
}

/// A multi-thread runtime for a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}
