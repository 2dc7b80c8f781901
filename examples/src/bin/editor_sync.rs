//! Three editors on one rich text, syncing over a lossy network: the editor
//! layer of Weft (change events, local updates, presence, cursors, undo)
//! exercised and checked end to end.
//!
//! ```text
//! cargo run -p examples --bin editor_sync -- --seed 7
//! cargo run -p examples --bin editor_sync -- [--seed N] [--rounds N] [--drop P] [--dup P]
//! ```
//!
//! Three replicas (peers 1, 2 and 3) type, delete and mark bold or italic in
//! the text "body", at their own caret or elsewhere, driven by a seeded
//! PRNG. Each local commit's update (from `Doc::subscribe_local_update`) is
//! broadcast to the two others over a simulated network that drops,
//! duplicates and reorders messages (`--drop` and `--dup` are percentages).
//! Because drops lose updates, every few rounds (and until everything
//! settled at the end) each replica sends its encoded version vector to the
//! others, which answer with the updates it lacks; those requests and
//! answers cross the same lossy network. Updates that arrive before the
//! ones they build on wait in the document's pending set.
//!
//! Each replica also:
//!
//! - keeps a copy of the text as a Quill delta built *only* from its change
//!   events (`Doc::subscribe` in chars, and a second copy from
//!   `Doc::subscribe_in(Unit::Utf16, ..)`), checked against `to_delta()`
//!   every few rounds and at the end;
//! - shares its caret (an encoded `Cursor`, as hex in a `Value::String`)
//!   through its `EphemeralStore` under `caret/<peer>`, over the same
//!   network; at the end every replica resolves the others' carets in its
//!   own document and prints them as markers in the text (`Hel|1lo wor|2ld`,
//!   long texts shortened around the markers).
//!
//! Peer 1 has an `UndoManager` and now and then undoes or redoes its last
//! step; the undo is ordinary ops and travels like any edit.
//!
//! At the end the three documents must have the same version, the same
//! delta and no pending updates, every mirror must equal its document, and
//! all replicas must place every caret at the same position. The binary
//! prints what travelled and what each replica saw, then `ok` (exit code
//! 0); a failed check prints what differs and exits with 1, a bad option
//! with 2.

use std::error::Error;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use weft::{
    Cursor, Delta, Doc, DocEvent, EphemeralStore, ExportMode, PeerId, Side, Subscription,
    UndoManager, Unit, Value, VersionVector,
};

/// The name of the text the replicas edit.
const TEXT: &str = "body";
/// How many replicas edit.
const REPLICAS: usize = 3;
/// Simulated time per round, in ms (the presence stores' clock).
const TICK_MS: u64 = 10;
/// Presence entries expire after this long without a refresh.
const PRESENCE_TIMEOUT_MS: u64 = 30_000;
/// Replicas run anti-entropy (version handshake) every this many rounds.
const SYNC_EVERY: usize = 8;
/// At the end, give up after this many anti-entropy rounds without
/// convergence.
const SETTLE_ROUNDS: usize = 1_000;
/// What replicas type: ASCII, a two-byte char, a CJK char and an astral one
/// (two UTF-16 units), so the UTF-16 mirror counts differently.
const ALPHABET: &[&str] = &["a", "e", "o", "n", "t", " ", "é", "文", "😀"];
/// Texts up to this many chars are printed whole in the carets lines.
const SHOW_WHOLE: usize = 100;
/// Otherwise, this many chars are shown on each side of a caret.
const CONTEXT: usize = 12;

/// The command line.
#[derive(Debug, Clone)]
struct Options {
    /// Seeds the edits and the network.
    seed: u64,
    /// Rounds of editing before the final settling.
    rounds: usize,
    /// Percentage of messages the network drops.
    drop: u32,
    /// Percentage of messages the network delivers twice.
    dup: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: 1,
            rounds: 120,
            drop: 20,
            dup: 10,
        }
    }
}

/// What `main` exits with after a failed check.
const FAILED: u8 = 1;
/// What `main` exits with for a bad command line.
const USAGE: u8 = 2;

fn main() -> ExitCode {
    let options = match parse_options(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("editor_sync: {e} (try --help)");
            return ExitCode::from(USAGE);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("editor_sync: FAILED (seed {}): {e}", options.seed);
            ExitCode::from(FAILED)
        }
    }
}

/// Reads the options; `None` when `--help` was printed.
fn parse_options(args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut options = Options::default();
    let mut args = args;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let bad = |name: &str, v: &str| format!("{name}: {v:?} is not a valid value");
        match arg.as_str() {
            "--seed" => {
                let v = value("--seed")?;
                options.seed = v.parse().map_err(|_| bad("--seed", &v))?;
            }
            "--rounds" => {
                let v = value("--rounds")?;
                options.rounds = v.parse().map_err(|_| bad("--rounds", &v))?;
            }
            "--drop" => {
                let v = value("--drop")?;
                options.drop = v
                    .parse()
                    .ok()
                    .filter(|p| *p <= 90)
                    .ok_or_else(|| bad("--drop", &v) + " (a percentage, 0 to 90)")?;
            }
            "--dup" => {
                let v = value("--dup")?;
                options.dup = v
                    .parse()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| bad("--dup", &v) + " (a percentage, 0 to 100)")?;
            }
            "--help" | "-h" => {
                let d = Options::default();
                println!(
                    "editor_sync [--seed N] [--rounds N] [--drop P] [--dup P]\n\n\
                     Three replicas edit one rich text over a network that drops --drop%\n\
                     and duplicates --dup% of messages (and reorders them); checks that\n\
                     they converge and that the event-built mirrors match, and prints\n\
                     everyone's carets.\n\
                     Defaults: --seed {} --rounds {} --drop {} --dup {}",
                    d.seed, d.rounds, d.drop, d.dup
                );
                return Ok(None);
            }
            _ => return Err(format!("unknown option {arg:?}")),
        }
    }
    Ok(Some(options))
}

/// SplitMix64: a small seeded PRNG, plenty for picking edits.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent` / 100.
    fn percent(&mut self, percent: u32) -> bool {
        self.next_u64() % 100 < u64::from(percent)
    }

    /// One to four chars of [`ALPHABET`].
    fn text(&mut self) -> String {
        let n = 1 + self.below(4);
        (0..n)
            .map(|_| ALPHABET[self.below(ALPHABET.len())])
            .collect()
    }
}

/// Locks `mutex`, also after a callback panicked while holding it (the
/// data are counters and copies that stay usable).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What travels between two replicas.
#[derive(Debug, Clone)]
enum Message {
    /// Document ops: a local commit's update, or the answer to a
    /// [`Message::SyncRequest`].
    Update(Vec<u8>),
    /// An encoded version vector: "send me what I lack".
    SyncRequest(Vec<u8>),
    /// Presence state (`EphemeralStore::encode` / `encode_all` bytes).
    Presence(Vec<u8>),
}

/// Counts of what the network did.
#[derive(Debug, Default)]
struct NetStats {
    /// Messages handed to the network (duplicates not counted).
    sent: usize,
    /// Of which updates.
    updates: usize,
    /// Of which sync requests.
    sync_requests: usize,
    /// Of which presence messages.
    presence: usize,
    /// Messages lost.
    dropped: usize,
    /// Messages delivered twice.
    duplicated: usize,
    /// Deliveries made (a duplicate counts twice).
    delivered: usize,
}

/// A lossy network: a queue per directed link; sending may drop or
/// duplicate a message, and delivery takes a random message of a random
/// link, so messages overtake each other.
struct Network {
    /// `links[from][to]`: messages in flight.
    links: [[Vec<Message>; REPLICAS]; REPLICAS],
    /// Decides drops, duplicates and delivery order.
    rng: Rng,
    /// Percentage of messages dropped.
    drop: u32,
    /// Percentage of messages duplicated.
    dup: u32,
    /// What happened so far.
    stats: NetStats,
}

impl Network {
    /// An empty network.
    fn new(rng: Rng, drop: u32, dup: u32) -> Network {
        Network {
            links: Default::default(),
            rng,
            drop,
            dup,
            stats: NetStats::default(),
        }
    }

    /// Sends `message` from replica `from` to replica `to`: lost, queued
    /// once or queued twice.
    fn send(&mut self, from: usize, to: usize, message: Message) {
        self.stats.sent += 1;
        match message {
            Message::Update(_) => self.stats.updates += 1,
            Message::SyncRequest(_) => self.stats.sync_requests += 1,
            Message::Presence(_) => self.stats.presence += 1,
        }
        if self.rng.percent(self.drop) {
            self.stats.dropped += 1;
            return;
        }
        if self.rng.percent(self.dup) {
            self.stats.duplicated += 1;
            self.links[from][to].push(message.clone());
        }
        self.links[from][to].push(message);
    }

    /// Sends `message` from `from` to every other replica.
    fn broadcast(&mut self, from: usize, message: &Message) {
        for to in (0..REPLICAS).filter(|&to| to != from) {
            self.send(from, to, message.clone());
        }
    }

    /// Messages in flight.
    fn queued(&self) -> usize {
        self.links.iter().flatten().map(Vec::len).sum()
    }

    /// Takes a random message of a random non-empty link, as
    /// `(from, to, message)`.
    fn next(&mut self) -> Option<(usize, usize, Message)> {
        let busy: Vec<(usize, usize)> = (0..REPLICAS)
            .flat_map(|f| (0..REPLICAS).map(move |t| (f, t)))
            .filter(|&(f, t)| !self.links[f][t].is_empty())
            .collect();
        if busy.is_empty() {
            return None;
        }
        let (from, to) = busy[self.rng.below(busy.len())];
        let queue = &mut self.links[from][to];
        let message = queue.swap_remove(self.rng.below(queue.len()));
        self.stats.delivered += 1;
        Some((from, to, message))
    }
}

/// A replica's copy of the text, kept only from its change events.
#[derive(Debug, Default)]
struct Mirror {
    /// The text's delta, from the events in chars.
    chars: Vec<Delta>,
    /// The same, from the events in UTF-16 units.
    utf16: Vec<Delta>,
    /// Events received (by the chars subscription).
    events: usize,
    /// The first event that did not apply, if any.
    error: Option<String>,
}

/// The callback of a mirror's subscription in `unit`: applies each event's
/// diff of [`TEXT`] to the copy kept in that unit.
fn mirror_callback(
    mirror: &Arc<Mutex<Mirror>>,
    unit: Unit,
) -> impl Fn(&DocEvent) + Send + Sync + 'static {
    let mirror = Arc::clone(mirror);
    move |event: &DocEvent| {
        let mut guard = lock(&mirror);
        let m = &mut *guard;
        if unit == Unit::Char {
            m.events += 1;
        }
        let copy = if unit == Unit::Char {
            &mut m.chars
        } else {
            &mut m.utf16
        };
        for diff in event.texts.iter().filter(|d| d.name == TEXT) {
            if let Err(e) = diff.apply_to(copy, event.unit) {
                m.error.get_or_insert_with(|| {
                    format!(
                        "a {:?} event ({:?}) does not apply: {e}",
                        unit, event.trigger
                    )
                });
            }
        }
    }
}

/// Encoded updates a document handed to its local-update subscriber.
#[derive(Debug, Default)]
struct Outbox {
    /// Not yet sent.
    queue: Vec<Vec<u8>>,
    /// Ever received.
    total: usize,
}

/// What a replica did and received.
#[derive(Debug, Default)]
struct ReplicaStats {
    /// Inserts, deletes and (un)marks made.
    edits: usize,
    /// Undo steps applied.
    undos: usize,
    /// Redo steps applied.
    redos: usize,
    /// Updates imported.
    imports: usize,
    /// Imports that parked ops as pending.
    parked: usize,
    /// Imports that brought nothing new (duplicates, overlapping answers).
    redundant: usize,
}

/// One editor: its document, presence store, mirror, outboxes and caret.
struct Replica {
    /// Its peer id (1, 2 or 3).
    peer: PeerId,
    /// Its copy of the document.
    doc: Doc,
    /// Its presence state (everyone's carets).
    presence: EphemeralStore,
    /// Its text as built from change events.
    mirror: Arc<Mutex<Mirror>>,
    /// Local updates of the document, to broadcast.
    updates: Arc<Mutex<Outbox>>,
    /// Local presence updates, to broadcast.
    presence_out: Arc<Mutex<Outbox>>,
    /// Where its user is typing.
    caret: Cursor,
    /// Counters for the summary.
    stats: ReplicaStats,
    /// Keeps the callbacks registered.
    _subscriptions: Vec<Subscription>,
}

impl Replica {
    /// A replica with an empty document, editing as `peer`, its presence
    /// timed by `clock` (ms).
    fn new(peer: PeerId, clock: &Arc<AtomicU64>) -> Result<Replica, Box<dyn Error>> {
        let mut doc = Doc::new();
        doc.set_peer_id(peer)?;
        let mirror = Arc::new(Mutex::new(Mirror::default()));
        let updates = Arc::new(Mutex::new(Outbox::default()));
        let presence_out = Arc::new(Mutex::new(Outbox::default()));
        let clock = Arc::clone(clock);
        let presence =
            EphemeralStore::with_clock(PRESENCE_TIMEOUT_MS, move || clock.load(Ordering::Relaxed));
        let to_outbox = |outbox: &Arc<Mutex<Outbox>>| {
            let outbox = Arc::clone(outbox);
            move |bytes: &[u8]| {
                let mut o = lock(&outbox);
                o.queue.push(bytes.to_vec());
                o.total += 1;
            }
        };
        let subscriptions = vec![
            doc.subscribe(mirror_callback(&mirror, Unit::Char)),
            doc.subscribe_in(Unit::Utf16, mirror_callback(&mirror, Unit::Utf16)),
            doc.subscribe_local_update(to_outbox(&updates)),
            presence.subscribe_local_updates(to_outbox(&presence_out)),
        ];
        let caret = doc.text(TEXT).cursor(0, Side::After)?;
        Ok(Replica {
            peer,
            doc,
            presence,
            mirror,
            updates,
            presence_out,
            caret,
            stats: ReplicaStats::default(),
            _subscriptions: subscriptions,
        })
    }

    /// One to three edits, mostly at the caret, then a commit.
    fn edit(&mut self, rng: &mut Rng) -> Result<(), Box<dyn Error>> {
        for _ in 0..1 + rng.below(3) {
            let len = self.doc.text(TEXT).len();
            // Most edits happen at the caret (which followed every remote
            // edit); the others after a click elsewhere.
            let at = if rng.percent(70) {
                self.doc.cursor_pos(&self.caret)?
            } else {
                rng.below(len + 1)
            };
            let roll = rng.below(100);
            let mut text = self.doc.text(TEXT);
            let caret = if roll < 55 || len == 0 {
                let s = rng.text();
                text.insert(at, &s)?;
                at + s.chars().count()
            } else if roll < 80 {
                // Backspace, or delete forwards at the start.
                let n = 1 + rng.below(3);
                let (start, del) = if at > 0 {
                    (at - n.min(at), n.min(at))
                } else {
                    (0, n.min(len))
                };
                text.delete(start, del)?;
                start
            } else {
                let start = rng.below(len);
                let end = start + 1 + rng.below((len - start).min(12));
                let key = if rng.percent(50) { "bold" } else { "italic" };
                if rng.percent(20) {
                    text.unmark(start..end, key)?;
                } else {
                    text.mark(start..end, key, true)?;
                }
                end
            };
            self.caret = text.cursor(caret, Side::After)?;
            self.stats.edits += 1;
        }
        self.doc.commit();
        Ok(())
    }

    /// Writes the caret to the presence store (also a heartbeat: it keeps
    /// the entry from expiring).
    fn share_caret(&self) {
        let hex = to_hex(&self.caret.encode());
        self.presence.set(&caret_key(self.peer), Value::from(hex));
    }

    /// Hands what the document and the presence store produced locally
    /// to the network.
    fn flush(&self, me: usize, net: &mut Network) {
        for bytes in std::mem::take(&mut lock(&self.updates).queue) {
            net.broadcast(me, &Message::Update(bytes));
        }
        for bytes in std::mem::take(&mut lock(&self.presence_out).queue) {
            net.broadcast(me, &Message::Presence(bytes));
        }
    }

    /// Describes how the mirrors differ from the document (empty: they
    /// match).
    fn mirror_problems(&self) -> Vec<String> {
        let now = self
            .doc
            .get_text(TEXT)
            .map_or_else(Vec::new, |t| t.to_delta());
        let m = lock(&self.mirror);
        let mut problems = Vec::new();
        if let Some(e) = &m.error {
            problems.push(format!("peer {}: {e}", self.peer));
        }
        // Compared as they are, as `weft_testkit::run_converge` does: applying a diff
        // leaves the mirror in the same normal form as `to_delta` (adjacent
        // inserts with equal attributes merged).
        if m.chars != now {
            problems.push(format!(
                "peer {}: the mirror (chars) differs from the document\n  mirror:   {:?}\n  document: {:?}",
                self.peer, m.chars, now
            ));
        }
        if m.utf16 != now {
            problems.push(format!(
                "peer {}: the mirror (UTF-16) differs from the document\n  mirror:   {:?}\n  document: {:?}",
                self.peer, m.utf16, now
            ));
        }
        problems
    }
}

/// The presence key of `peer`'s caret.
fn caret_key(peer: PeerId) -> String {
    format!("caret/{peer}")
}

/// `bytes` as lowercase hex.
fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Reads [`to_hex`]'s output; `None` for anything else.
fn from_hex(hex: &str) -> Option<Vec<u8>> {
    let digit = |b: u8| char::from(b).to_digit(16);
    hex.as_bytes()
        .chunks(2)
        .map(|pair| match *pair {
            [hi, lo] => u8::try_from(digit(hi)? << 4 | digit(lo)?).ok(),
            _ => None,
        })
        .collect()
}

/// Sends each replica's version to each other one (and its whole presence
/// state), so that whatever the network lost is sent again.
fn anti_entropy(replicas: &[Replica], net: &mut Network) {
    for (from, r) in replicas.iter().enumerate() {
        let version = r.doc.version().encode();
        let presence = r.presence.encode_all();
        for to in (0..REPLICAS).filter(|&to| to != from) {
            net.send(from, to, Message::SyncRequest(version.clone()));
            net.send(from, to, Message::Presence(presence.clone()));
        }
    }
}

/// Delivers `message` from `from` to `to` (who may answer through `net`).
fn deliver(
    replicas: &mut [Replica],
    net: &mut Network,
    from: usize,
    to: usize,
    message: Message,
) -> Result<(), Box<dyn Error>> {
    let (sender, r) = (replicas[from].peer, &mut replicas[to]);
    match message {
        Message::Update(bytes) => {
            let status = r.doc.import(&bytes).map_err(|e| {
                format!(
                    "peer {} cannot import an update of peer {sender}: {e}",
                    r.peer
                )
            })?;
            r.stats.imports += 1;
            if !status.pending.is_empty() {
                r.stats.parked += 1;
            } else if status.applied.is_empty() {
                r.stats.redundant += 1;
            }
        }
        Message::SyncRequest(bytes) => {
            let theirs = VersionVector::decode(&bytes)?;
            if !theirs.includes_all(&r.doc.version()) {
                let update = r.doc.export(ExportMode::Updates { from: &theirs })?;
                net.send(to, from, Message::Update(update));
            }
        }
        Message::Presence(bytes) => r.presence.apply(&bytes).map_err(|e| {
            format!(
                "peer {} cannot apply presence of peer {sender}: {e}",
                r.peer
            )
        })?,
    }
    Ok(())
}

/// Delivers some of the messages in flight.
fn deliver_some(replicas: &mut [Replica], net: &mut Network) -> Result<(), Box<dyn Error>> {
    let n = net.rng.below(net.queued() + 1);
    for _ in 0..n {
        let Some((from, to, message)) = net.next() else {
            break;
        };
        deliver(replicas, net, from, to, message)?;
    }
    Ok(())
}

/// Undoes (or redoes) the last step of replica 0, checking that a step that
/// made ops also handed an update to the network. Returns whether there
/// was a step.
fn undo_or_redo(
    r: &mut Replica,
    undo: &mut UndoManager,
    redo: bool,
) -> Result<bool, Box<dyn Error>> {
    let version = r.doc.version();
    let sent = lock(&r.updates).total;
    let done = if redo {
        undo.redo(&mut r.doc)?
    } else {
        undo.undo(&mut r.doc)?
    };
    if done.is_none() {
        return Ok(false);
    }
    if r.doc.version() != version && lock(&r.updates).total == sent {
        let what = if redo { "a redo" } else { "an undo" };
        return Err(format!("{what} made ops but gave no local update to send").into());
    }
    if redo {
        r.stats.redos += 1;
    } else {
        r.stats.undos += 1;
    }
    Ok(true)
}

/// Whether every replica has the same version and the same presence
/// state.
fn converged(replicas: &[Replica]) -> bool {
    let version = replicas[0].doc.version();
    let presence = replicas[0].presence.get_all_states();
    replicas
        .iter()
        .all(|r| r.doc.version() == version && r.presence.get_all_states() == presence)
}

/// Stops editing and runs the network (still lossy) until every message is
/// delivered and the replicas agree, with anti-entropy between attempts.
/// Returns how many anti-entropy rounds it took.
fn settle(replicas: &mut [Replica], net: &mut Network) -> Result<usize, Box<dyn Error>> {
    for attempt in 0..SETTLE_ROUNDS {
        for (i, r) in replicas.iter().enumerate() {
            r.flush(i, net);
        }
        while let Some((from, to, message)) = net.next() {
            deliver(replicas, net, from, to, message)?;
        }
        if converged(replicas) {
            return Ok(attempt);
        }
        anti_entropy(replicas, net);
    }
    Err(format!("the replicas did not converge after {SETTLE_ROUNDS} anti-entropy rounds").into())
}

/// `text` with a marker `|<peer>` at each caret position, shortened around
/// the markers when it is long.
fn render(text: &str, carets: &[(usize, PeerId)]) -> String {
    let mut carets = carets.to_vec();
    carets.sort_unstable();
    let chars: Vec<char> = text.chars().collect();
    let shown = |i: usize| {
        chars.len() <= SHOW_WHOLE
            || carets
                .iter()
                .any(|&(p, _)| i + CONTEXT >= p && i < p + CONTEXT)
    };
    let mut out = String::new();
    let mut next = carets.iter().peekable();
    let mut elided = false;
    for i in 0..=chars.len() {
        while let Some((_, peer)) = next.next_if(|(p, _)| *p == i) {
            let _ = write!(out, "|{peer}");
            elided = false;
        }
        let Some(&c) = chars.get(i) else { break };
        if shown(i) {
            out.push(c);
            elided = false;
        } else if !elided {
            out.push('…');
            elided = true;
        }
    }
    out
}

/// Where replica `r` places the caret of `peer` (from its presence store,
/// resolved in its own document).
fn resolve_caret(r: &Replica, peer: PeerId) -> Result<usize, String> {
    let who = format!("peer {} resolving the caret of peer {peer}", r.peer);
    let Some(Value::String(hex)) = r.presence.get(&caret_key(peer)) else {
        return Err(format!("{who}: no caret in the presence store"));
    };
    let bytes = from_hex(&hex).ok_or_else(|| format!("{who}: bad hex {hex:?}"))?;
    let cursor = Cursor::decode(&bytes).map_err(|e| format!("{who}: {e}"))?;
    r.doc.cursor_pos(&cursor).map_err(|e| format!("{who}: {e}"))
}

/// Runs the simulation and its checks; prints the summary.
fn run(options: &Options) -> Result<(), Box<dyn Error>> {
    let clock = Arc::new(AtomicU64::new(1_700_000_000_000));
    let mut replicas = Vec::with_capacity(REPLICAS);
    for peer in 1..=REPLICAS as PeerId {
        replicas.push(Replica::new(peer, &clock)?);
    }
    // Undo covers peer 1's edits from here on.
    let mut undo = UndoManager::new(&mut replicas[0].doc);
    let mut rng = Rng(options.seed);
    let mut net = Network::new(
        Rng(options.seed ^ 0x6E65_7477_6F72_6B21),
        options.drop,
        options.dup,
    );

    for (i, r) in replicas.iter().enumerate() {
        r.share_caret();
        r.flush(i, &mut net);
    }
    for round in 0..options.rounds {
        clock.fetch_add(TICK_MS, Ordering::Relaxed);
        for (i, r) in replicas.iter_mut().enumerate() {
            // Peer 1 sometimes undoes instead of editing, and sometimes
            // redoes what it just undid (before a new edit empties the redo
            // stack).
            if i == 0 && undo.can_redo() && rng.percent(40) {
                undo_or_redo(r, &mut undo, true)?;
            } else if i == 0 && rng.percent(12) {
                undo_or_redo(r, &mut undo, false)?;
            } else if rng.percent(60) {
                r.edit(&mut rng)?;
            }
        }
        for (i, r) in replicas.iter().enumerate() {
            r.share_caret();
            r.flush(i, &mut net);
        }
        deliver_some(&mut replicas, &mut net)?;
        if (round + 1) % SYNC_EVERY == 0 {
            for r in &replicas {
                r.presence.remove_outdated();
            }
            anti_entropy(&replicas, &mut net);
            let problems: Vec<String> =
                replicas.iter().flat_map(Replica::mirror_problems).collect();
            if !problems.is_empty() {
                return Err(format!("after round {}:\n{}", round + 1, problems.join("\n")).into());
            }
        }
    }
    let settle_rounds = settle(&mut replicas, &mut net)?;

    // The checks.
    let mut problems = Vec::new();
    let delta = replicas[0].doc.text(TEXT).to_delta();
    let version = replicas[0].doc.version();
    for r in &mut replicas {
        if r.doc.version() != version {
            problems.push(format!(
                "peer {}: version {:?}, peer 1 has {version:?}",
                r.peer,
                r.doc.version()
            ));
        }
        let own = r.doc.text(TEXT).to_delta();
        if own != delta {
            problems.push(format!(
                "peer {}: the text differs from peer 1's\n  peer {}: {own:?}\n  peer 1: {delta:?}",
                r.peer, r.peer
            ));
        }
        let pending = r.doc.pending_spans();
        if !pending.is_empty() {
            problems.push(format!(
                "peer {}: updates still pending after convergence: {pending:?}",
                r.peer
            ));
        }
        problems.extend(r.mirror_problems());
    }
    let text = replicas[0].doc.text(TEXT).to_string();
    let len = text.chars().count();
    let mut carets_lines = Vec::new();
    for (k, owner) in replicas.iter().enumerate() {
        let own = owner.doc.cursor_pos(&owner.caret)?;
        for (j, r) in replicas.iter().enumerate().filter(|&(j, _)| j != k) {
            match resolve_caret(r, owner.peer) {
                Ok(pos) if pos == own && pos <= len => {}
                Ok(pos) => problems.push(format!(
                    "peer {} places the caret of peer {} at {pos}, its owner at {own} (text of {len} chars)",
                    replicas[j].peer, owner.peer
                )),
                Err(e) => problems.push(e),
            }
        }
    }
    for r in &replicas {
        let mut carets = Vec::new();
        for other in replicas.iter().filter(|o| o.peer != r.peer) {
            if let Ok(pos) = resolve_caret(r, other.peer) {
                carets.push((pos, other.peer));
            }
        }
        carets_lines.push(format!(
            "  peer {} sees  {}",
            r.peer,
            render(&text, &carets)
        ));
    }

    // The summary.
    let s = &net.stats;
    println!(
        "editor_sync: seed {}, {} rounds, drop {}%, dup {}%",
        options.seed, options.rounds, options.drop, options.dup
    );
    println!(
        "network: {} messages sent ({} updates, {} sync requests, {} presence), {} dropped, {} duplicated, {} delivered",
        s.sent, s.updates, s.sync_requests, s.presence, s.dropped, s.duplicated, s.delivered
    );
    for r in &replicas {
        let st = &r.stats;
        let events = lock(&r.mirror).events;
        println!(
            "peer {}: {} edits, {} undos, {} redos, {} local updates; {} imports ({} parked, {} redundant); {} events",
            r.peer,
            st.edits,
            st.undos,
            st.redos,
            lock(&r.updates).total,
            st.imports,
            st.parked,
            st.redundant,
            events
        );
    }
    println!(
        "settled after {settle_rounds} anti-entropy round{}: {len} chars ({} UTF-16 units) in {} runs, {} ops",
        if settle_rounds == 1 { "" } else { "s" },
        text.encode_utf16().count(),
        delta.len(),
        version.op_count()
    );
    println!("carets:");
    for line in &carets_lines {
        println!("{line}");
    }
    if problems.is_empty() {
        println!("ok");
        Ok(())
    } else {
        Err(format!("{} failed checks:\n{}", problems.len(), problems.join("\n")).into())
    }
}
