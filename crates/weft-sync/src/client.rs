//! The client: keeps one [`Doc`] in sync with one server document.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::{mpsc, watch, Notify};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use weft::{Doc, EphemeralStore, Subscription, VersionVector};

use crate::protocol::{Access, ClientMessage, ServerMessage, Status, ENVELOPE};
use crate::split;

/// How a [`SyncClient`] connects.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The token the server's authorisation hook reads.
    pub token: String,
    /// The epoch of the history the document holds, if it synced with this
    /// server document before (see [`SyncState::epoch`]; keep it with the
    /// document): a different one on the server is refused, never merged.
    pub epoch: Option<u128>,
    /// Presence to carry (this client's keys go to the others; theirs come
    /// back into it).
    pub presence: Option<Arc<EphemeralStore>>,
    /// The largest message sent or accepted (default 1 MiB, as the server).
    pub max_message: usize,
    /// The first wait before reconnecting (default 100 ms); it doubles per
    /// failed try, with jitter, up to `max_backoff`.
    pub min_backoff: Duration,
    /// The longest wait before reconnecting (default 10 s).
    pub max_backoff: Duration,
    /// A server silent this long is taken as gone (default 45 s; the
    /// server pings every 15 s).
    pub silence: Duration,
}

impl ClientOptions {
    /// Options with `token` and the defaults.
    pub fn new(token: impl Into<String>) -> ClientOptions {
        ClientOptions {
            token: token.into(),
            epoch: None,
            presence: None,
            max_message: crate::protocol::DEFAULT_MAX_MESSAGE,
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
            silence: Duration::from_secs(45),
        }
    }

    /// The epoch the document synced with before.
    pub fn epoch(mut self, epoch: Option<u128>) -> ClientOptions {
        self.epoch = epoch;
        self
    }

    /// Presence to carry.
    pub fn presence(mut self, presence: Arc<EphemeralStore>) -> ClientOptions {
        self.presence = Some(presence);
        self
    }

    /// The reconnect backoff bounds.
    pub fn backoff(mut self, min: Duration, max: Duration) -> ClientOptions {
        self.min_backoff = min;
        self.max_backoff = max.max(min);
        self
    }
}

/// Where the connection stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// Connecting, or waiting to reconnect.
    Connecting,
    /// Joined; the catch-up from the server is still arriving.
    Syncing,
    /// Joined and caught up: edits flow both ways as they are made.
    Connected,
    /// The server refused the document for good (divergent history,
    /// forbidden, unknown document): the client stopped and merged nothing.
    Refused {
        /// Why.
        status: Status,
        /// The server's words.
        message: String,
    },
    /// [`SyncClient::close`] was called.
    Closed,
}

/// What a [`SyncClient`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncState {
    /// Where the connection stands.
    pub connection: Connection,
    /// Batches of local edits sent and not acknowledged yet (after a
    /// disconnect, those sent before it: the next join resends every op
    /// the server lacks).
    pub unacked: usize,
    /// The epoch of the server document's history, once joined.
    pub epoch: Option<u128>,
    /// What the token allows, once joined.
    pub access: Option<Access>,
    /// Ops the server has stored for sure: its version at the last join,
    /// plus every acknowledged batch and every update it sent since.
    pub server_version: VersionVector,
    /// Connections made so far.
    pub connects: u64,
    /// The last batch the server refused, and why (e.g. rate limited).
    pub last_refusal: Option<Status>,
    /// Bytes of updates received from the server so far (catch-ups and
    /// relays).
    pub received_bytes: u64,
}

/// Syncs a shared [`Doc`] with a document on a `weft-sync` server, on the
/// current tokio runtime, until closed. Local edits are sent when they are
/// committed ([`Doc::commit`]); updates of others are imported as they
/// arrive (subscribers see them with origin `"sync"`).
///
/// # Examples
///
/// ```no_run
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use weft::Doc;
/// use weft_sync::{ClientOptions, SyncClient};
///
/// # async fn run() {
/// let doc = Arc::new(Mutex::new(Doc::new()));
/// let client = SyncClient::start("ws://127.0.0.1:8080", "notes", Arc::clone(&doc), ClientOptions::new(""));
/// {
///     let mut d = doc.lock().unwrap();
///     d.text("t").insert(0, "hello").unwrap();
///     d.commit(); // sends it
/// }
/// assert!(client.wait_synced(Duration::from_secs(5)).await);
/// client.close().await;
/// # }
/// ```
pub struct SyncClient {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
    _local: Subscription,
    _presence: Option<Subscription>,
}

struct Shared {
    doc: Arc<Mutex<Doc>>,
    state: watch::Sender<SyncState>,
    local: Notify,
    stop: AtomicBool,
    stopped: Notify,
}

fn lock(doc: &Mutex<Doc>) -> std::sync::MutexGuard<'_, Doc> {
    doc.lock().unwrap_or_else(|e| e.into_inner())
}

impl SyncClient {
    /// Starts syncing `doc` with document `doc_id` of the server at `url`
    /// (`ws://host:port`). Returns at once; see [`SyncClient::state`].
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(
        url: &str,
        doc_id: &str,
        doc: Arc<Mutex<Doc>>,
        options: ClientOptions,
    ) -> SyncClient {
        let (state, _) = watch::channel(SyncState {
            connection: Connection::Connecting,
            unacked: 0,
            epoch: options.epoch,
            access: None,
            server_version: VersionVector::new(),
            connects: 0,
            last_refusal: None,
            received_bytes: 0,
        });
        let shared = Arc::new(Shared {
            doc,
            state,
            local: Notify::new(),
            stop: AtomicBool::new(false),
            stopped: Notify::new(),
        });
        let weak = Arc::downgrade(&shared);
        let local = lock(&shared.doc).subscribe_local_update(move |_| {
            if let Some(s) = weak.upgrade() {
                s.local.notify_one();
            }
        });
        // This client's own presence keys: those set before it started,
        // and every key it sets (others' arrive through `apply`).
        let (presence_tx, presence_rx) = mpsc::channel::<Vec<u8>>(256);
        let own_keys: HashSet<String> = options
            .presence
            .as_ref()
            .map(|p| p.keys().into_iter().collect())
            .unwrap_or_default();
        let presence = options.presence.as_ref().map(|p| {
            p.subscribe_local_updates(move |bytes| {
                let _ = presence_tx.try_send(bytes.to_vec());
            })
        });
        let task = tokio::spawn(run(
            Arc::clone(&shared),
            url.to_owned(),
            doc_id.to_owned(),
            options,
            Presence {
                rx: presence_rx,
                own_keys,
            },
        ));
        SyncClient {
            shared,
            task,
            _local: local,
            _presence: presence,
        }
    }

    /// The current state.
    pub fn state(&self) -> SyncState {
        self.shared.state.borrow().clone()
    }

    /// The state, as a channel that sees every change.
    pub fn watch(&self) -> watch::Receiver<SyncState> {
        self.shared.state.subscribe()
    }

    /// Whether every op of the document is on the server (acknowledged, or
    /// received from it) and the connection is up.
    pub fn is_synced(&self) -> bool {
        let state = self.shared.state.borrow();
        // Ops held pending (their dependencies missing) count as synced
        // when the server sent them: it holds them pending too.
        state.connection == Connection::Connected
            && state
                .server_version
                .includes_all(&lock(&self.shared.doc).version())
    }

    /// Waits until [`SyncClient::is_synced`], at most `timeout`; whether it is.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let mut rx = self.shared.state.subscribe();
        let wait = async {
            loop {
                if self.is_synced() {
                    return true;
                }
                if matches!(
                    rx.borrow().connection,
                    Connection::Refused { .. } | Connection::Closed
                ) {
                    return false;
                }
                // Local commits change the document without a new state.
                let _ = tokio::time::timeout(Duration::from_millis(50), rx.changed()).await;
            }
        };
        tokio::time::timeout(timeout, wait).await.unwrap_or(false)
    }

    /// Waits until the state satisfies `f`, at most `timeout`.
    pub async fn wait_for(&self, timeout: Duration, f: impl Fn(&SyncState) -> bool) -> bool {
        let mut rx = self.shared.state.subscribe();
        let wait = async {
            loop {
                if f(&rx.borrow_and_update()) {
                    return true;
                }
                if rx.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.unwrap_or(false)
    }

    /// Tells the client the document has local commits to send. Commits
    /// made through [`Doc::commit`] are noticed without it; this is for a
    /// caller that imported edits from elsewhere (e.g. a file).
    pub fn changed(&self) {
        self.shared.local.notify_one();
    }

    /// Disconnects and stops (unacknowledged edits stay in the document;
    /// the next client started on it sends them).
    pub async fn close(mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.stopped.notify_one();
        if tokio::time::timeout(Duration::from_secs(2), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
        self.shared
            .state
            .send_modify(|s| s.connection = Connection::Closed);
    }
}

impl Drop for SyncClient {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How a session ended.
enum Ended {
    /// For good: refused.
    Refused(Status, String),
    /// Stopped by the user.
    Stopped,
    /// Lost; reconnect (whether the session got as far as joining).
    Lost { joined: bool },
}

/// Local presence updates, and the keys this client set.
struct Presence {
    rx: mpsc::Receiver<Vec<u8>>,
    own_keys: HashSet<String>,
}

async fn run(
    shared: Arc<Shared>,
    url: String,
    doc_id: String,
    options: ClientOptions,
    mut presence: Presence,
) {
    let mut failures = 0u32;
    let mut rng = seed();
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        shared
            .state
            .send_modify(|s| s.connection = Connection::Connecting);
        match session(&shared, &url, &doc_id, &options, &mut presence).await {
            Ended::Refused(status, message) => {
                shared
                    .state
                    .send_modify(|s| s.connection = Connection::Refused { status, message });
                return;
            }
            Ended::Stopped => return,
            Ended::Lost { joined } => {
                if joined {
                    failures = 0;
                }
            }
        }
        // Exponential backoff with jitter (half to full of the step).
        let step = options
            .min_backoff
            .saturating_mul(1u32 << failures.min(16))
            .min(options.max_backoff);
        failures = failures.saturating_add(1);
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let wait = step.mul_f64(0.5 + (rng % 1000) as f64 / 2000.0);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.stopped.notified() => return,
        }
    }
}

fn seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    (t ^ u64::from(std::process::id()).rotate_left(32)) | 1
}

async fn session(
    shared: &Shared,
    url: &str,
    doc_id: &str,
    options: &ClientOptions,
    presence: &mut Presence,
) -> Ended {
    let config = WebSocketConfig {
        max_message_size: Some(options.max_message),
        max_frame_size: Some(options.max_message),
        ..WebSocketConfig::default()
    };
    let connect = tokio_tungstenite::connect_async_with_config(url, Some(config), true);
    let ws = tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(10), connect) => match r {
            Ok(Ok((ws, _))) => ws,
            _ => return Ended::Lost { joined: false },
        },
        _ = shared.stopped.notified() => return Ended::Stopped,
    };
    shared.state.send_modify(|s| s.connects += 1);
    let (mut sink, mut stream) = ws.split();
    let epoch = shared.state.borrow().epoch;
    let join = ClientMessage::Join {
        doc: doc_id.to_owned(),
        token: options.token.clone(),
        epoch,
        version: lock(&shared.doc).version(),
    };
    if sink.send(Message::Binary(join.encode())).await.is_err() {
        return Ended::Lost { joined: false };
    }
    // Updates are cut to fit the smaller of the two sides' limits.
    let mut limit = options.max_message.saturating_sub(ENVELOPE).max(1);
    let mut joined = false;
    let mut access = Access::None;
    // What the server has or will have once our batches are stored.
    let mut sent = VersionVector::new();
    let mut unacked: VecDeque<(u64, VersionVector)> = VecDeque::new();
    let mut next_batch = 1u64;
    let mut resend_at: Option<tokio::time::Instant> = None;
    // Sends the local ops the server lacks, as batches.
    macro_rules! send_local {
        () => {{
            if joined && access == Access::Write {
                let (pieces, version) = {
                    let doc = lock(&shared.doc);
                    match split::updates_since(&doc, &sent, limit) {
                        Ok(p) => (p, doc.version()),
                        Err(_) => (Vec::new(), doc.version()),
                    }
                };
                sent.merge(&version);
                let mut failed = false;
                for piece in pieces {
                    let batch = next_batch;
                    next_batch += 1;
                    unacked.push_back((batch, version.clone()));
                    let m = ClientMessage::Update {
                        doc: doc_id.to_owned(),
                        batch,
                        update: piece,
                    };
                    if sink.feed(Message::Binary(m.encode())).await.is_err() {
                        failed = true;
                        break;
                    }
                }
                if failed || sink.flush().await.is_err() {
                    return Ended::Lost { joined };
                }
                let n = unacked.len();
                shared.state.send_modify(|s| s.unacked = n);
            }
        }};
    }
    loop {
        let resend = async {
            match resend_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            m = tokio::time::timeout(options.silence, stream.next()) => {
                let bytes = match m {
                    Ok(Some(Ok(Message::Binary(b)))) => b,
                    Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
                    _ => return Ended::Lost { joined },
                };
                let Ok(message) = ServerMessage::decode(&bytes) else {
                    return Ended::Lost { joined };
                };
                match message {
                    ServerMessage::Joined { doc, epoch, version, access: a, max_message } if doc == doc_id => {
                        joined = true;
                        let theirs = usize::try_from(max_message).unwrap_or(usize::MAX);
                        limit = limit.min(theirs.saturating_sub(ENVELOPE).max(1));
                        access = a;
                        sent = version.clone();
                        unacked.clear();
                        shared.state.send_modify(|s| {
                            s.connection = Connection::Syncing;
                            s.epoch = Some(epoch);
                            s.access = Some(a);
                            s.server_version = version;
                            s.unacked = 0;
                        });
                        if let Some(p) = &options.presence {
                            for key in &presence.own_keys {
                                if p.get(key).is_some() {
                                    let m = ClientMessage::Presence {
                                        doc: doc_id.to_owned(),
                                        bytes: p.encode(key),
                                    };
                                    if sink.send(Message::Binary(m.encode())).await.is_err() {
                                        return Ended::Lost { joined };
                                    }
                                }
                            }
                        }
                        send_local!();
                    }
                    ServerMessage::Updates { doc, updates } if doc == doc_id => {
                        let mut got = VersionVector::new();
                        {
                            let mut d = lock(&shared.doc);
                            for u in &updates {
                                // The server validated it; a failure here
                                // would be a bug there, and the next join
                                // sends the ops again.
                                let _ = d.import_with(u, "sync");
                                got.merge(&split::version_of(u));
                            }
                        }
                        sent.merge(&got);
                        let n: usize = updates.iter().map(Vec::len).sum();
                        shared.state.send_modify(|s| {
                            s.server_version.merge(&got);
                            s.received_bytes += n as u64;
                        });
                    }
                    ServerMessage::Synced { doc } if doc == doc_id => {
                        shared.state.send_modify(|s| s.connection = Connection::Connected);
                    }
                    ServerMessage::Ack { doc, batch, status } if doc == doc_id => {
                        let Some(i) = unacked.iter().position(|(b, _)| *b == batch) else {
                            continue;
                        };
                        let Some((_, version)) = unacked.remove(i) else { continue };
                        match status {
                            Status::Ok => {
                                let n = unacked.len();
                                shared.state.send_modify(|s| {
                                    s.server_version.merge(&version);
                                    s.unacked = n;
                                });
                            }
                            Status::RateLimited | Status::Unavailable => {
                                // Send again later: everything not acked.
                                unacked.clear();
                                sent = shared.state.borrow().server_version.clone();
                                let wait = if status == Status::RateLimited { 1000 } else { 500 };
                                resend_at = Some(tokio::time::Instant::now() + Duration::from_millis(wait));
                                shared.state.send_modify(|s| {
                                    s.unacked = 0;
                                    s.last_refusal = Some(status);
                                });
                            }
                            other => {
                                if other == Status::Forbidden {
                                    access = Access::Read;
                                }
                                let n = unacked.len();
                                shared.state.send_modify(|s| {
                                    s.unacked = n;
                                    s.last_refusal = Some(other);
                                });
                            }
                        }
                    }
                    ServerMessage::Presence { doc, bytes } if doc == doc_id => {
                        if let Some(p) = &options.presence {
                            let _ = p.apply(&bytes);
                        }
                    }
                    ServerMessage::Refused { doc, status, message } if doc == doc_id => {
                        return match status {
                            Status::GoingAway | Status::Unavailable => Ended::Lost { joined },
                            _ => Ended::Refused(status, message),
                        };
                    }
                    ServerMessage::Error { status, message } => {
                        return match status {
                            Status::UnsupportedVersion => Ended::Refused(status, message),
                            _ => Ended::Lost { joined },
                        };
                    }
                    _ => {}
                }
            }
            _ = shared.local.notified() => send_local!(),
            _ = resend => {
                resend_at = None;
                send_local!();
            }
            bytes = presence.rx.recv(), if options.presence.is_some() => {
                let Some(bytes) = bytes else { continue };
                let scratch = EphemeralStore::new(1 << 40);
                if scratch.apply(&bytes).is_ok() {
                    presence.own_keys.extend(scratch.keys());
                }
                if joined {
                    let m = ClientMessage::Presence { doc: doc_id.to_owned(), bytes };
                    if sink.send(Message::Binary(m.encode())).await.is_err() {
                        return Ended::Lost { joined };
                    }
                }
            }
            _ = shared.stopped.notified() => {
                let _ = sink.send(Message::Close(None)).await;
                return Ended::Stopped;
            }
        }
    }
}
