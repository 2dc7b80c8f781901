//! The server: one task per WebSocket connection, one task per open
//! document (a *room*) that validates, stores and relays its updates.
//!
//! An update goes: connection (size and rate checks) -> the room's bounded
//! queue -> [`Store::append`] (imports it atomically, then commits it with
//! the other appends of that moment in one fsync) -> the ack to its sender
//! -> the other members' bounded outgoing queues. A member whose queue is
//! full is disconnected ([`Status::TooSlow`]) rather than buffered for.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use weft::{Doc, EphemeralStore, ExportMode, VersionVector};
use weft_store::Store;

use crate::auth::Authorize;
use crate::protocol::{encode_updates, Access, ClientMessage, ServerMessage, Status, ENVELOPE};
use crate::split;
use crate::Result;

/// Limits and timings of a [`Server`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// The largest message accepted or sent, in bytes (default 1 MiB).
    pub max_message: usize,
    /// Updates a connection may send per second, sustained (default 100).
    pub updates_per_second: u32,
    /// Updates a connection may send in a burst above that (default 200).
    pub update_burst: u32,
    /// Documents one connection may have joined at once (default 64).
    pub max_documents_per_connection: usize,
    /// Messages waiting for one connection before it counts as too slow
    /// and is disconnected (default 1,024; each at most `max_message`).
    pub outgoing_queue: usize,
    /// Messages waiting for one document's task (default 256): a full
    /// queue makes the connections feeding it wait.
    pub room_queue: usize,
    /// How long a document nobody has joined stays loaded (default 30 s).
    pub idle_unload: Duration,
    /// How often the server pings each connection (default 15 s); a
    /// connection silent for three times this is closed.
    pub keepalive: Duration,
    /// How long presence lives without a refresh (default 30 s).
    pub presence_timeout: Duration,
    /// Whether a join of a document that does not exist, with write access
    /// and no epoch, creates it (default true).
    pub create_documents: bool,
    /// A folder whose files plain HTTP `GET` requests on the same port get
    /// (a web editor beside its sync; `/` is `index.html`); default none:
    /// only WebSocket connections are accepted.
    pub static_dir: Option<std::path::PathBuf>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_message: crate::protocol::DEFAULT_MAX_MESSAGE,
            updates_per_second: 100,
            update_burst: 200,
            max_documents_per_connection: 64,
            outgoing_queue: 1024,
            room_queue: 256,
            idle_unload: Duration::from_secs(30),
            keepalive: Duration::from_secs(15),
            presence_timeout: Duration::from_secs(30),
            create_documents: true,
            static_dir: None,
        }
    }
}

/// Counters of a running server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Connections open now.
    pub connections: usize,
    /// Documents loaded now.
    pub rooms: usize,
    /// Updates acknowledged as durable.
    pub acked: u64,
    /// Updates refused (invalid, forbidden, rate limited, ...).
    pub refused: u64,
    /// Connections closed for not reading their messages.
    pub too_slow: u64,
}

/// A sync server over a [`Store`].
///
/// # Examples
///
/// ```no_run
/// use std::sync::Arc;
/// use weft_store::{Store, StoreOptions};
/// use weft_sync::{AllowAll, Server, ServerOptions};
///
/// # async fn run() -> weft_sync::Result<()> {
/// let store = Store::open_sqlite("docs.db", StoreOptions::new())?;
/// let server = Server::new(Arc::new(store), Arc::new(AllowAll), ServerOptions::default());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// server.serve(listener).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    store: Arc<Store>,
    auth: Arc<dyn Authorize>,
    options: ServerOptions,
    rooms: Mutex<HashMap<String, Arc<RoomHandle>>>,
    next_conn: AtomicU64,
    connections: AtomicUsize,
    acked: AtomicU64,
    refused: AtomicU64,
    too_slow: AtomicU64,
    /// Tells other servers on the same database of stored rows.
    #[cfg(feature = "postgres")]
    notifier: Mutex<Option<crate::notify::Notifier>>,
}

/// A room as the registry holds it.
struct RoomHandle {
    tx: mpsc::Sender<RoomMsg>,
    /// Connections that joined (or are joining) through this handle: the
    /// room unloads only when there are none, under the registry's lock.
    users: AtomicUsize,
    /// Another server stored rows of this document since the room looked.
    remote: AtomicBool,
}

/// What a connection (or the notifier) asks of a room.
enum RoomMsg {
    Join {
        conn: u64,
        member: Member,
        epoch: Option<u128>,
        version: VersionVector,
        reply: oneshot::Sender<bool>,
    },
    Update {
        conn: u64,
        batch: u64,
        update: Vec<u8>,
    },
    Presence {
        conn: u64,
        bytes: Vec<u8>,
    },
    Leave {
        conn: u64,
    },
    Remote,
}

/// What a connection's writer sends.
enum Out {
    Frame(Vec<u8>),
    Frames(Vec<Vec<u8>>),
    Relay { doc: Arc<str>, update: Arc<Vec<u8>> },
    Presence { doc: Arc<str>, bytes: Arc<Vec<u8>> },
    Close(Status, String),
}

/// How a room reaches one connection.
struct Member {
    tx: mpsc::Sender<Out>,
    control: Arc<Control>,
    access: Access,
    presence_keys: HashSet<String>,
}

/// Tells a connection to close (set by a room that found it too slow).
#[derive(Default)]
struct Control {
    closed: AtomicBool,
    notify: Notify,
    /// Bytes of join catch-ups queued and not written yet: the one kind of
    /// queued message that is neither small nor shared with other members.
    catch_up_bytes: AtomicUsize,
}

/// Catch-up bytes a connection may have queued beyond the first: a client
/// joining documents faster than it reads them is disconnected, so it
/// holds at most one catch-up plus this much.
const CATCH_UP_BUDGET: usize = 32 << 20;

impl Control {
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}

impl Server {
    /// A server over `store`, asking `auth` on every join.
    pub fn new(store: Arc<Store>, auth: Arc<dyn Authorize>, options: ServerOptions) -> Server {
        Server {
            inner: Arc::new(Inner {
                store,
                auth,
                options,
                rooms: Mutex::new(HashMap::new()),
                next_conn: AtomicU64::new(1),
                connections: AtomicUsize::new(0),
                acked: AtomicU64::new(0),
                refused: AtomicU64::new(0),
                too_slow: AtomicU64::new(0),
                #[cfg(feature = "postgres")]
                notifier: Mutex::new(None),
            }),
        }
    }

    /// Shares the store with other servers on the same PostgreSQL
    /// database: after each stored batch this server sends a notification
    /// naming the document (`NOTIFY weft_sync`), and on each notification
    /// from another server the document's room reads the new rows and
    /// relays them to its clients. `config` is the store's connection
    /// string. Call inside a tokio runtime, before serving.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Config`] if the connection string does not parse.
    #[cfg(feature = "postgres")]
    pub fn share_over_postgres(&self, config: &str) -> Result<()> {
        let notifier = crate::notify::Notifier::start(config, Arc::downgrade(&self.inner))?;
        *self
            .inner
            .notifier
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(notifier);
        Ok(())
    }

    /// Accepts connections on `listener` until the task is dropped.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Io`] if accepting fails for good.
    pub async fn serve(&self, listener: TcpListener) -> Result<()> {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(s) => s,
                Err(e) if is_transient(&e) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let _ = stream.set_nodelay(true);
            let inner = Arc::clone(&self.inner);
            tokio::spawn(async move {
                inner.connections.fetch_add(1, Ordering::Relaxed);
                connection(Arc::clone(&inner), stream, peer).await;
                inner.connections.fetch_sub(1, Ordering::Relaxed);
            });
        }
    }

    /// Binds `addr` and serves on a new task; returns the bound address
    /// (useful with port 0) and the task.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Io`] if the address cannot be bound.
    pub async fn spawn(
        &self,
        addr: &str,
    ) -> Result<(SocketAddr, tokio::task::JoinHandle<Result<()>>)> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let server = self.clone();
        Ok((
            local,
            tokio::spawn(async move { server.serve(listener).await }),
        ))
    }

    /// What the server is doing now.
    pub fn stats(&self) -> ServerStats {
        ServerStats {
            connections: self.inner.connections.load(Ordering::Relaxed),
            rooms: self
                .inner
                .rooms
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .len(),
            acked: self.inner.acked.load(Ordering::Relaxed),
            refused: self.inner.refused.load(Ordering::Relaxed),
            too_slow: self.inner.too_slow.load(Ordering::Relaxed),
        }
    }

    /// The store the server writes to.
    pub fn store(&self) -> &Arc<Store> {
        &self.inner.store
    }
}

fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionAborted | ConnectionReset | Interrupted | WouldBlock)
        || e.raw_os_error() == Some(24) // EMFILE: wait for descriptors
        || e.raw_os_error() == Some(23)
}

impl Inner {
    /// The room of `doc`, with one more user (loaded if needed).
    fn use_room(self: &Arc<Self>, doc: &str) -> Arc<RoomHandle> {
        let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = rooms.get(doc) {
            if !h.tx.is_closed() {
                h.users.fetch_add(1, Ordering::AcqRel);
                return Arc::clone(h);
            }
        }
        let (tx, rx) = mpsc::channel(self.options.room_queue.max(1));
        let handle = Arc::new(RoomHandle {
            tx,
            users: AtomicUsize::new(1),
            remote: AtomicBool::new(false),
        });
        rooms.insert(doc.to_owned(), Arc::clone(&handle));
        let room = Room {
            id: doc.into(),
            inner: Arc::clone(self),
            handle: Arc::clone(&handle),
            epoch: None,
            version: VersionVector::new(),
            members: HashMap::new(),
            presence: EphemeralStore::new(self.options.presence_timeout.as_millis() as u64),
        };
        tokio::spawn(room.run(rx));
        handle
    }

    /// Marks every loaded room as behind (another server stored rows).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn remote_rows(&self, doc: Option<&str>) {
        let rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        let mark = |h: &Arc<RoomHandle>| {
            h.remote.store(true, Ordering::Release);
            let _ = h.tx.try_send(RoomMsg::Remote);
        };
        match doc {
            Some(d) => rooms.get(d).into_iter().for_each(mark),
            None => rooms.values().for_each(mark),
        }
    }

    fn notify_stored(&self, _doc: &str) {
        #[cfg(feature = "postgres")]
        if let Some(n) = &*self.notifier.lock().unwrap_or_else(|e| e.into_inner()) {
            n.stored(_doc);
        }
    }

    /// The largest update sent in one message.
    fn update_limit(&self) -> usize {
        self.options.max_message.saturating_sub(ENVELOPE).max(1)
    }

    async fn blocking<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Store) -> T + Send + 'static,
    ) -> Option<T> {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || f(&store)).await.ok()
    }
}

/// One open document.
struct Room {
    id: Arc<str>,
    inner: Arc<Inner>,
    handle: Arc<RoomHandle>,
    epoch: Option<u128>,
    /// The document's version as this room last saw it in the store.
    version: VersionVector,
    members: HashMap<u64, Member>,
    presence: EphemeralStore,
}

/// Presence keys one member may hold in a document.
const MAX_PRESENCE_KEYS: usize = 16;

/// The largest presence message relayed (bytes).
const MAX_PRESENCE_BYTES: usize = 64 << 10;

/// Updates a room appends at once (their commits share fsyncs).
const ROOM_BATCH: usize = 64;

impl Room {
    async fn run(mut self, mut rx: mpsc::Receiver<RoomMsg>) {
        let id = self.id.to_string();
        match self.inner.blocking(move |s| s.epoch(&id)).await {
            Some(Ok(e)) => self.epoch = Some(e.0),
            Some(Err(weft_store::Error::UnknownDocument { .. })) => {}
            _ => {
                // The store failed: refuse joins until the room is tried again.
                self.unload(&mut rx, "the store could not be read").await;
                return;
            }
        }
        let idle = self.inner.options.idle_unload;
        let presence_tick = self
            .inner
            .options
            .presence_timeout
            .max(Duration::from_millis(100));
        let mut next_expiry = tokio::time::Instant::now() + presence_tick;
        let mut held: Option<RoomMsg> = None;
        loop {
            let msg = match held.take() {
                Some(m) => m,
                None => {
                    let idle_at = tokio::time::Instant::now() + idle;
                    tokio::select! {
                        m = rx.recv() => match m {
                            Some(m) => m,
                            None => return,
                        },
                        _ = tokio::time::sleep_until(next_expiry) => {
                            self.presence.remove_outdated();
                            next_expiry = tokio::time::Instant::now() + presence_tick;
                            continue;
                        }
                        _ = tokio::time::sleep_until(idle_at), if self.members.is_empty() => {
                            if self.try_unload(&mut rx) {
                                return;
                            }
                            continue;
                        }
                    }
                }
            };
            match msg {
                RoomMsg::Update {
                    conn,
                    batch,
                    update,
                } => {
                    let mut updates = vec![(conn, batch, update)];
                    while updates.len() < ROOM_BATCH {
                        match rx.try_recv() {
                            Ok(RoomMsg::Update {
                                conn,
                                batch,
                                update,
                            }) => updates.push((conn, batch, update)),
                            Ok(other) => {
                                held = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    self.updates(updates).await;
                }
                RoomMsg::Join {
                    conn,
                    member,
                    epoch,
                    version,
                    reply,
                } => {
                    let ok = self.join(conn, member, epoch, version).await;
                    let _ = reply.send(ok);
                }
                RoomMsg::Presence { conn, bytes } => self.presence(conn, bytes),
                RoomMsg::Leave { conn } => self.leave(conn),
                RoomMsg::Remote => {}
            }
            if self.handle.remote.swap(false, Ordering::AcqRel) {
                self.catch_up_remote().await;
            }
        }
    }

    /// Unloads if nobody uses the room; under the registry's lock, so no
    /// connection can pick the handle up meanwhile.
    fn try_unload(&self, rx: &mut mpsc::Receiver<RoomMsg>) -> bool {
        let mut rooms = self.inner.rooms.lock().unwrap_or_else(|e| e.into_inner());
        if self.handle.users.load(Ordering::Acquire) != 0 || !rx.is_empty() {
            return false;
        }
        if rooms
            .get(&*self.id)
            .is_some_and(|h| Arc::ptr_eq(h, &self.handle))
        {
            rooms.remove(&*self.id);
        }
        rx.close();
        true
    }

    /// Leaves the registry now and answers what is queued with a refusal.
    async fn unload(&mut self, rx: &mut mpsc::Receiver<RoomMsg>, why: &str) {
        {
            let mut rooms = self.inner.rooms.lock().unwrap_or_else(|e| e.into_inner());
            if rooms
                .get(&*self.id)
                .is_some_and(|h| Arc::ptr_eq(h, &self.handle))
            {
                rooms.remove(&*self.id);
            }
        }
        rx.close();
        while let Some(msg) = rx.recv().await {
            match msg {
                RoomMsg::Join { member, reply, .. } => {
                    let _ = member.tx.try_send(Out::Frame(
                        ServerMessage::Refused {
                            doc: self.id.to_string(),
                            status: Status::Unavailable,
                            message: why.to_owned(),
                        }
                        .encode(),
                    ));
                    let _ = reply.send(false);
                }
                RoomMsg::Update { conn, batch, .. } => {
                    self.ack(conn, batch, Status::Unavailable);
                }
                _ => {}
            }
        }
    }

    fn refuse(&self, member: &Member, status: Status, message: String) {
        let _ = member.tx.try_send(Out::Frame(
            ServerMessage::Refused {
                doc: self.id.to_string(),
                status,
                message,
            }
            .encode(),
        ));
    }

    async fn join(
        &mut self,
        conn: u64,
        member: Member,
        epoch: Option<u128>,
        version: VersionVector,
    ) -> bool {
        if self.epoch.is_none() {
            let create = self.inner.options.create_documents
                && member.access == Access::Write
                && epoch.is_none();
            if !create {
                let why = if epoch.is_some() {
                    // The client knew a document that is gone now.
                    (
                        Status::DivergentHistory,
                        "the document was deleted".to_owned(),
                    )
                } else {
                    (Status::UnknownDocument, "no such document".to_owned())
                };
                self.refuse(&member, why.0, why.1);
                return false;
            }
            let id = self.id.to_string();
            let created = self
                .inner
                .blocking(move |s| match s.create(&id) {
                    Err(weft_store::Error::AlreadyExists { .. }) => s.epoch(&id),
                    other => other,
                })
                .await;
            match created {
                Some(Ok(e)) => self.epoch = Some(e.0),
                other => {
                    let why = match other {
                        Some(Err(e)) => e.to_string(),
                        _ => "the store task failed".to_owned(),
                    };
                    self.refuse(&member, Status::Unavailable, why);
                    return false;
                }
            }
        }
        let Some(ours) = self.epoch else {
            return false;
        };
        if epoch.is_some_and(|e| e != ours) {
            self.refuse(
                &member,
                Status::DivergentHistory,
                format!(
                    "the document's history (epoch {ours:032x}) is not the one this client holds \
                     (epoch {:032x}): it was deleted and created again, or restored from elsewhere",
                    epoch.unwrap_or_default()
                ),
            );
            return false;
        }
        let limit = self.inner.update_limit();
        let catch_up = self.read(move |doc| catch_up(doc, &version, limit)).await;
        let (now, updates) = match catch_up {
            Some(Ok(v)) => v,
            Some(Err(crate::Error::Store(weft_store::Error::UnknownDocument { .. }))) => {
                // Deleted meanwhile (by another server or an admin).
                self.epoch = None;
                self.refuse(
                    &member,
                    Status::DivergentHistory,
                    "the document was deleted".to_owned(),
                );
                return false;
            }
            other => {
                let why = match other {
                    Some(Err(e)) => e.to_string(),
                    _ => "the store task failed".to_owned(),
                };
                self.refuse(&member, Status::Unavailable, why);
                return false;
            }
        };
        // `version` is what every member has been sent. The read may have
        // brought in rows other servers stored: the joiner has them now,
        // the other members get them through a catch-up.
        if self.members.is_empty() {
            self.version = now.clone();
        } else if !self.version.includes_all(&now) {
            self.handle.remote.store(true, Ordering::Release);
        }
        let mut frames = vec![ServerMessage::Joined {
            doc: self.id.to_string(),
            epoch: ours,
            version: now,
            access: member.access,
            max_message: self.inner.options.max_message as u64,
        }
        .encode()];
        frames.extend(pack(&self.id, &updates, self.inner.options.max_message));
        frames.push(
            ServerMessage::Synced {
                doc: self.id.to_string(),
            }
            .encode(),
        );
        let presence = self.presence.encode_all();
        if !self.presence.keys().is_empty() {
            frames.push(
                ServerMessage::Presence {
                    doc: self.id.to_string(),
                    bytes: presence,
                }
                .encode(),
            );
        }
        let size: usize = frames.iter().map(Vec::len).sum();
        let queued = member
            .control
            .catch_up_bytes
            .fetch_add(size, Ordering::AcqRel);
        if (queued > 0 && queued + size > CATCH_UP_BUDGET)
            || member.tx.try_send(Out::Frames(frames)).is_err()
        {
            member
                .control
                .catch_up_bytes
                .fetch_sub(size, Ordering::AcqRel);
            self.inner.too_slow.fetch_add(1, Ordering::Relaxed);
            let _ = member.tx.try_send(Out::Close(
                Status::TooSlow,
                "joins arrive faster than their catch-ups are read".to_owned(),
            ));
            member.control.close();
            return false;
        }
        self.members.insert(conn, member);
        true
    }

    async fn updates(&mut self, updates: Vec<(u64, u64, Vec<u8>)>) {
        let mut work = Vec::with_capacity(updates.len());
        for (conn, batch, update) in updates {
            let status = match self.members.get(&conn) {
                None => Some(Status::NotJoined),
                Some(m) if m.access < Access::Write => Some(Status::Forbidden),
                Some(_) => None,
            };
            if let Some(status) = status {
                self.ack(conn, batch, status);
                continue;
            }
            let update = Arc::new(update);
            let store = Arc::clone(&self.inner.store);
            let id = self.id.to_string();
            let bytes = Arc::clone(&update);
            // Concurrent appends: the store commits them together.
            let task = tokio::task::spawn_blocking(move || store.append(&id, &bytes));
            work.push((conn, batch, update, task));
        }
        let mut stored = false;
        for (conn, batch, update, task) in work {
            let result = task.await;
            let status = match result {
                Ok(Ok(appended)) => {
                    // The members get this update's ops now; anything else
                    // the stored document holds (rows of other servers)
                    // through a catch-up.
                    self.version.merge(&split::version_of(&update));
                    if !self.version.includes_all(&appended.version) {
                        self.handle.remote.store(true, Ordering::Release);
                    }
                    if appended.seq.is_some() {
                        stored = true;
                        self.relay(conn, &update);
                    }
                    Status::Ok
                }
                Ok(Err(weft_store::Error::Import { .. })) => Status::Invalid,
                Ok(Err(weft_store::Error::UnknownDocument { .. })) => {
                    self.gone().await;
                    return;
                }
                Ok(Err(_)) | Err(_) => Status::Unavailable,
            };
            self.ack(conn, batch, status);
        }
        if stored {
            self.inner.notify_stored(&self.id);
        }
    }

    /// The document was deleted under the room: every member is refused.
    async fn gone(&mut self) {
        self.epoch = None;
        self.version = VersionVector::new();
        for (_, m) in self.members.drain() {
            let _ = m.tx.try_send(Out::Frame(
                ServerMessage::Refused {
                    doc: self.id.to_string(),
                    status: Status::DivergentHistory,
                    message: "the document was deleted".to_owned(),
                }
                .encode(),
            ));
        }
    }

    fn ack(&mut self, conn: u64, batch: u64, status: Status) {
        if status == Status::Ok {
            self.inner.acked.fetch_add(1, Ordering::Relaxed);
        } else {
            self.inner.refused.fetch_add(1, Ordering::Relaxed);
        }
        let frame = ServerMessage::Ack {
            doc: self.id.to_string(),
            batch,
            status,
        }
        .encode();
        if let Some(m) = self.members.get(&conn) {
            if m.tx.try_send(Out::Frame(frame)).is_err() {
                self.drop_slow(conn);
            }
        }
    }

    /// Sends a durable update to every member but `from`.
    fn relay(&mut self, from: u64, update: &Arc<Vec<u8>>) {
        let doc = Arc::clone(&self.id);
        self.broadcast(from, || Out::Relay {
            doc: Arc::clone(&doc),
            update: Arc::clone(update),
        });
    }

    /// Queues `out()` for every member but `except`; members whose queue
    /// is full are dropped as too slow.
    fn broadcast(&mut self, except: u64, out: impl Fn() -> Out) {
        let slow: Vec<u64> = self
            .members
            .iter()
            .filter(|(&c, m)| c != except && m.tx.try_send(out()).is_err())
            .map(|(&c, _)| c)
            .collect();
        for c in slow {
            self.drop_slow(c);
        }
    }

    /// Presence bytes to every member but `except`.
    fn broadcast_presence(&mut self, except: u64, bytes: Vec<u8>) {
        let doc = Arc::clone(&self.id);
        let bytes = Arc::new(bytes);
        self.broadcast(except, || Out::Presence {
            doc: Arc::clone(&doc),
            bytes: Arc::clone(&bytes),
        });
    }

    /// A member whose queue is full (or gone) leaves and is disconnected.
    fn drop_slow(&mut self, conn: u64) {
        if let Some(m) = self.members.get(&conn) {
            if !m.tx.is_closed() {
                self.inner.too_slow.fetch_add(1, Ordering::Relaxed);
            }
            m.control.close();
        }
        self.leave(conn);
    }

    fn presence(&mut self, conn: u64, bytes: Vec<u8>) {
        if !self.members.contains_key(&conn) {
            return;
        }
        let scratch = EphemeralStore::new(self.presence.timeout_ms());
        if scratch.apply(&bytes).is_err() {
            if let Some(m) = self.members.get(&conn) {
                let _ = m.tx.try_send(Out::Close(
                    Status::Malformed,
                    "presence bytes do not decode".to_owned(),
                ));
                m.control.close();
            }
            return;
        }
        // A key belongs to the member that set it first (until it leaves);
        // a member holds a bounded number of keys of bounded size.
        let keys = scratch.keys();
        let taken = keys.iter().any(|k| {
            self.members
                .iter()
                .any(|(&c, other)| c != conn && other.presence_keys.contains(k))
        });
        let Some(m) = self.members.get_mut(&conn) else {
            return;
        };
        let owned = m.presence_keys.len()
            + keys
                .iter()
                .filter(|k| !m.presence_keys.contains(*k))
                .count();
        if taken || owned > MAX_PRESENCE_KEYS || bytes.len() > MAX_PRESENCE_BYTES {
            self.inner.refused.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.presence.apply(&bytes).is_err() {
            return;
        }
        m.presence_keys.extend(keys);
        self.broadcast_presence(conn, bytes);
    }

    /// A member left (or dropped): its presence goes at once.
    fn leave(&mut self, conn: u64) {
        let Some(m) = self.members.remove(&conn) else {
            return;
        };
        let mut gone = Vec::new();
        for key in &m.presence_keys {
            if self.presence.get(key).is_some() {
                self.presence.delete(key);
                gone.push(self.presence.encode(key));
            }
        }
        for bytes in gone {
            self.broadcast_presence(conn, bytes);
        }
    }

    /// Runs `f` on the stored document (read through the store, so rows
    /// other servers stored are in it) on the blocking pool; `None` if
    /// the task failed.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Doc) -> crate::Result<T> + Send + 'static,
    ) -> Option<crate::Result<T>> {
        let id = self.id.to_string();
        self.inner
            .blocking(move |s| s.read(&id, f).map_err(crate::Error::from).and_then(|r| r))
            .await
    }

    /// Relays what other servers stored since this room last looked.
    async fn catch_up_remote(&mut self) {
        if self.epoch.is_none() {
            return;
        }
        let from = self.version.clone();
        let limit = self.inner.update_limit();
        let result = self
            .read(move |doc| Ok((doc.version(), split::updates_since(doc, &from, limit)?)))
            .await;
        match result {
            Some(Ok((version, updates))) => {
                self.version.merge(&version);
                for u in updates {
                    self.relay(0, &Arc::new(u));
                }
            }
            Some(Err(crate::Error::Store(weft_store::Error::UnknownDocument { .. }))) => {
                self.gone().await
            }
            _ => {
                // Try again with the next notification or message.
                self.handle.remote.store(true, Ordering::Release);
            }
        }
    }
}

/// What a joining client lacks: the server's version and the updates.
/// A client with nothing gets the snapshot when it is smaller.
fn catch_up(
    doc: &Doc,
    from: &VersionVector,
    limit: usize,
) -> crate::Result<(VersionVector, Vec<Vec<u8>>)> {
    let version = doc.version();
    let updates = split::updates_since(doc, from, limit)?;
    if from.is_empty() && !updates.is_empty() {
        let snapshot = doc.export(ExportMode::Snapshot)?;
        let total: usize = updates.iter().map(Vec::len).sum();
        if snapshot.len() < total && snapshot.len() <= limit {
            return Ok((version, vec![snapshot]));
        }
    }
    Ok((version, updates))
}

/// Updates packed into as few messages as fit `max_message`.
fn pack(doc: &str, updates: &[Vec<u8>], max_message: usize) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let mut group: Vec<&Vec<u8>> = Vec::new();
    let mut size = 0;
    for u in updates {
        if !group.is_empty() && size + u.len() + ENVELOPE > max_message {
            frames.push(encode_updates(doc, &group));
            group.clear();
            size = 0;
        }
        size += u.len() + 10;
        group.push(u);
    }
    if !group.is_empty() {
        frames.push(encode_updates(doc, &group));
    }
    frames
}

/// A token bucket: `rate` per second, at most `burst` saved.
struct Bucket {
    tokens: f64,
    rate: f64,
    burst: f64,
    at: Instant,
}

impl Bucket {
    fn take(&mut self) -> bool {
        let now = Instant::now();
        self.tokens =
            (self.tokens + now.duration_since(self.at).as_secs_f64() * self.rate).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// One client connection, from handshake to close.
async fn connection(inner: Arc<Inner>, stream: TcpStream, _peer: SocketAddr) {
    let options = &inner.options;
    if let Some(dir) = &options.static_dir {
        let Some(head) = crate::files::peek_head(&stream).await else {
            return;
        };
        if !crate::files::is_websocket(&head) {
            crate::files::serve(stream, dir, &head).await;
            return;
        }
    }
    let config = WebSocketConfig {
        max_message_size: Some(options.max_message),
        max_frame_size: Some(options.max_message),
        write_buffer_size: 128 << 10,
        // What a client that does not read can make the server buffer in
        // the socket's writer, beside its bounded queue of messages.
        max_write_buffer_size: (128 << 10) + options.max_message.saturating_mul(2),
        ..WebSocketConfig::default()
    };
    let handshake = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::accept_async_with_config(stream, Some(config)),
    )
    .await;
    let Ok(Ok(ws)) = handshake else {
        return;
    };
    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::channel::<Out>(options.outgoing_queue.max(1));
    let control = Arc::new(Control::default());
    let max_message = options.max_message;
    let keepalive = options.keepalive;
    let writer_control = Arc::clone(&control);
    // The writer takes at most this many queued items at once, so what it
    // holds while a slow socket blocks it is bounded like the queue.
    let drain_max = options.outgoing_queue.clamp(1, 256);
    let writer = tokio::spawn(async move {
        let mut ping = tokio::time::interval(keepalive);
        ping.tick().await;
        loop {
            tokio::select! {
                item = rx.recv() => {
                    let Some(first) = item else { break };
                    let mut items = vec![first];
                    while items.len() < drain_max {
                        match rx.try_recv() {
                            Ok(i) => items.push(i),
                            Err(_) => break,
                        }
                    }
                    let catch_up: usize = items
                        .iter()
                        .map(|i| match i {
                            Out::Frames(fs) => fs.iter().map(Vec::len).sum(),
                            _ => 0,
                        })
                        .sum();
                    let (frames, close) = frames_of(items, max_message);
                    for f in frames {
                        if sink.feed(Message::Binary(f)).await.is_err() {
                            writer_control.close();
                            return;
                        }
                    }
                    if sink.flush().await.is_err() {
                        writer_control.close();
                        return;
                    }
                    writer_control
                        .catch_up_bytes
                        .fetch_sub(catch_up, Ordering::AcqRel);
                    if close {
                        let _ = sink.close().await;
                        writer_control.close();
                        return;
                    }
                }
                _ = ping.tick() => {
                    if sink.send(Message::Ping(Vec::new())).await.is_err() {
                        writer_control.close();
                        return;
                    }
                }
            }
        }
    });
    let conn = inner.next_conn.fetch_add(1, Ordering::Relaxed);
    let mut joined: HashMap<String, Arc<RoomHandle>> = HashMap::new();
    let mut bucket = Bucket {
        tokens: f64::from(options.update_burst.max(1)),
        rate: f64::from(options.updates_per_second),
        burst: f64::from(options.update_burst.max(1)),
        at: Instant::now(),
    };
    let silence = keepalive.saturating_mul(3);
    loop {
        if control.closed.load(Ordering::Acquire) {
            break;
        }
        let next = tokio::select! {
            m = tokio::time::timeout(silence, stream.next()) => m,
            _ = control.notify.notified() => break,
        };
        let message = match next {
            Err(_) => break,   // silent too long
            Ok(None) => break, // closed
            Ok(Some(Err(e))) => {
                use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
                if matches!(e, WsError::Capacity(CapacityError::MessageTooLong { .. })) {
                    let _ = tx.try_send(Out::Close(
                        Status::TooLarge,
                        format!("messages are limited to {max_message} bytes"),
                    ));
                }
                break;
            }
            Ok(Some(Ok(m))) => m,
        };
        let bytes = match message {
            Message::Binary(b) => b,
            Message::Ping(_) | Message::Pong(_) => continue,
            Message::Close(_) => break,
            Message::Text(_) | Message::Frame(_) => {
                let _ = tx.try_send(Out::Close(
                    Status::Malformed,
                    "only binary messages are spoken here".to_owned(),
                ));
                break;
            }
        };
        let message = match ClientMessage::decode(&bytes) {
            Ok(m) => m,
            Err(e) => {
                let status = if e.unsupported_version {
                    Status::UnsupportedVersion
                } else {
                    Status::Malformed
                };
                let _ = tx.try_send(Out::Close(status, e.to_string()));
                break;
            }
        };
        match message {
            ClientMessage::Join {
                doc,
                token,
                epoch,
                version,
            } => {
                let refuse = |status: Status, message: String| {
                    Out::Frame(
                        ServerMessage::Refused {
                            doc: doc.clone(),
                            status,
                            message,
                        }
                        .encode(),
                    )
                };
                if let Some(room) = joined.remove(&doc) {
                    // Joined already (or refused since, the document
                    // deleted): leave, then join again with a fresh sync.
                    let _ = room.tx.send(RoomMsg::Leave { conn }).await;
                    room.users.fetch_sub(1, Ordering::AcqRel);
                }
                if doc.is_empty() || doc.len() > weft_store::MAX_ID_LEN {
                    let _ = tx.try_send(refuse(
                        Status::UnknownDocument,
                        format!(
                            "a document id is 1 to {} bytes long",
                            weft_store::MAX_ID_LEN
                        ),
                    ));
                    continue;
                }
                if joined.len() >= options.max_documents_per_connection {
                    let _ = tx.try_send(refuse(
                        Status::TooManyDocuments,
                        format!(
                            "a connection may join {} documents at once",
                            options.max_documents_per_connection
                        ),
                    ));
                    continue;
                }
                let access = inner.auth.access(&token, &doc);
                if access == Access::None {
                    let _ = tx.try_send(refuse(
                        Status::Forbidden,
                        "the token does not give access to this document".to_owned(),
                    ));
                    continue;
                }
                let room = inner.use_room(&doc);
                let (reply, answer) = oneshot::channel();
                let member = Member {
                    tx: tx.clone(),
                    control: Arc::clone(&control),
                    access,
                    presence_keys: HashSet::new(),
                };
                let sent = room
                    .tx
                    .send(RoomMsg::Join {
                        conn,
                        member,
                        epoch,
                        version,
                        reply,
                    })
                    .await;
                let ok = sent.is_ok() && answer.await.unwrap_or(false);
                if ok {
                    joined.insert(doc, room);
                } else {
                    if sent.is_err() {
                        let _ = tx.try_send(refuse(
                            Status::GoingAway,
                            "the document is unloading; join again".to_owned(),
                        ));
                    }
                    room.users.fetch_sub(1, Ordering::AcqRel);
                }
            }
            ClientMessage::Update { doc, batch, update } => {
                let status = if !joined.contains_key(&doc) {
                    Some(Status::NotJoined)
                } else if !bucket.take() {
                    Some(Status::RateLimited)
                } else {
                    None
                };
                if let Some(status) = status {
                    inner.refused.fetch_add(1, Ordering::Relaxed);
                    let ack = ServerMessage::Ack { doc, batch, status }.encode();
                    if tx.try_send(Out::Frame(ack)).is_err() {
                        break;
                    }
                    continue;
                }
                let room = &joined[&doc];
                if room
                    .tx
                    .send(RoomMsg::Update {
                        conn,
                        batch,
                        update,
                    })
                    .await
                    .is_err()
                {
                    break;
                }
            }
            ClientMessage::Presence { doc, bytes } => {
                // Presence shares the update rate: over it, a message is
                // dropped (the next one carries the state again).
                if !bucket.take() {
                    inner.refused.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                if let Some(room) = joined.get(&doc) {
                    if room
                        .tx
                        .send(RoomMsg::Presence { conn, bytes })
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
            ClientMessage::Leave { doc } => {
                if let Some(room) = joined.remove(&doc) {
                    let _ = room.tx.send(RoomMsg::Leave { conn }).await;
                    room.users.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
    }
    for (_, room) in joined {
        let _ = room.tx.send(RoomMsg::Leave { conn }).await;
        room.users.fetch_sub(1, Ordering::AcqRel);
    }
    drop(tx);
    // Let the writer send what is queued (an error frame, then a close),
    // and read until the client answers the close: a socket dropped with
    // unread input is reset, and a reset discards what the client has not
    // read yet (the error frame). Bounded, for clients that never answer.
    let mut writer = writer;
    let drain = async {
        let _ = (&mut writer).await;
        while let Some(Ok(_)) = stream.next().await {}
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    writer.abort();
}

/// Relays gathered for one message: the document, the updates, their size.
type Pending = (Arc<str>, Vec<Arc<Vec<u8>>>, usize);

/// The frames of queued items: consecutive relays and presence of one
/// document share a message; `true` if the connection closes after them.
fn frames_of(items: Vec<Out>, max_message: usize) -> (Vec<Vec<u8>>, bool) {
    let mut frames = Vec::new();
    let mut relay: Option<Pending> = None;
    let flush = |relay: &mut Option<Pending>, frames: &mut Vec<Vec<u8>>| {
        if let Some((doc, updates, _)) = relay.take() {
            let refs: Vec<&[u8]> = updates.iter().map(|u| u.as_slice()).collect();
            frames.push(encode_updates(&doc, &refs));
        }
    };
    for item in items {
        match item {
            Out::Relay { doc, update } => {
                let fits = relay.as_ref().is_some_and(|(d, _, size)| {
                    *d == doc && size + update.len() + ENVELOPE <= max_message
                });
                if !fits {
                    flush(&mut relay, &mut frames);
                    relay = Some((doc, Vec::new(), 0));
                }
                if let Some((_, updates, size)) = relay.as_mut() {
                    *size += update.len() + 10;
                    updates.push(update);
                }
            }
            other => {
                flush(&mut relay, &mut frames);
                match other {
                    Out::Frame(f) => frames.push(f),
                    Out::Frames(fs) => frames.extend(fs),
                    Out::Presence { doc, bytes } => frames.push(
                        ServerMessage::Presence {
                            doc: doc.to_string(),
                            bytes: bytes.to_vec(),
                        }
                        .encode(),
                    ),
                    Out::Close(status, message) => {
                        frames.push(ServerMessage::Error { status, message }.encode());
                        return (frames, true);
                    }
                    Out::Relay { .. } => {}
                }
            }
        }
    }
    flush(&mut relay, &mut frames);
    (frames, false)
}
