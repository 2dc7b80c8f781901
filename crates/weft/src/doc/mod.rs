//! [`Doc`]: the entry point, tying the history ([`OpLog`]) to the state of
//! its texts; `lazy.rs` holds what a lazily imported snapshot still has
//! to load.

mod cancel;
mod checkout;
mod containers;
mod debug;
mod events;
mod history;
mod lazy;
mod maps;
mod pieces;

pub use events::CommitOptions;
mod read;
mod sent;
mod shallow;
mod spans;

use std::hash::{BuildHasher, Hasher};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::encoding::{self, Decoded, Snapshot};
use crate::error::{Error, Result};
use crate::event::{Draft, EventTrigger, Observers};
use crate::id::{Counter, IdSpan, PeerId, Seq, TextIdx};
use crate::map::MapTable;
use crate::merge::{self, Parked, Pending, Update};
use crate::oplog::OpLog;
use crate::style::StyleConfig;
use crate::text::{Need, Text, TextSource, TextTable, Unloaded};
use crate::unit::Unit;
use crate::version::{Frontiers, VersionVector};
use containers::Kind;
pub use history::ChangeMeta;
use lazy::LazyDoc;

/// What [`Doc::export`] writes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ExportMode<'a> {
    /// Every op the holder of version `from` lacks, as a compact update.
    /// An empty version vector exports the whole history.
    Updates {
        /// The version the receiver already has.
        from: &'a VersionVector,
    },
    /// The whole history plus the current state of every text: what a new
    /// peer needs to open the document at once. [`Doc::import`] of a
    /// snapshot into an empty document reads the texts straight from it
    /// and decodes the history only when an operation needs it (see
    /// [`Doc::load`]); into a non-empty document it merges like an update.
    /// Exporting is deterministic: the same document always gives the
    /// same bytes, also after a round trip through a snapshot.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, ExportMode};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("notes").insert(0, "Hello world")?;
    /// doc.text("notes").mark(0..5, "bold", true)?;
    /// let bytes = doc.export(ExportMode::Snapshot)?;
    ///
    /// let mut copy = Doc::new();
    /// copy.import(&bytes)?; // checks the checksum; decodes nothing else yet
    /// assert_eq!(copy.text("notes").to_string(), "Hello world");
    /// assert_eq!(copy.version(), doc.version());
    /// copy.text("notes").insert(11, "!")?; // builds this text's tree
    /// assert_eq!(copy.text("notes").to_string(), "Hello world!");
    /// assert_eq!(copy.export(ExportMode::Snapshot)?.len() > 0, true);
    /// # Ok::<(), weft::Error>(())
    /// ```
    Snapshot,
    /// The ops in these spans that this document has (others are left
    /// out), as an update: e.g. the changes a peer asks for by id. A
    /// receiver lacking ops they depend on keeps them pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, ExportMode, IdSpan};
    ///
    /// let mut a = Doc::new();
    /// a.set_peer_id(1)?;
    /// a.text("t").insert(0, "ab")?;
    /// a.commit();
    /// a.text("t").insert(2, "cd")?;
    /// let mut b = Doc::new();
    /// b.import(&a.export(ExportMode::UpdatesInRange(&[IdSpan::new(1, 0..2)]))?)?;
    /// assert_eq!(b.text("t").to_string(), "ab");
    /// b.import(&a.export(ExportMode::UpdatesInRange(&[IdSpan::new(1, 2..4)]))?)?;
    /// assert_eq!(b.text("t").to_string(), "abcd");
    /// # Ok::<(), weft::Error>(())
    /// ```
    UpdatesInRange(&'a [IdSpan]),
    /// A snapshot of the document as it was at a version: its history up
    /// to that version and its texts then (what [`Doc::fork_at`] holds).
    /// [`crate::Error::UnknownOp`] if the version names an op this
    /// document does not have.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, ExportMode};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "draft")?;
    /// let v1 = doc.frontiers();
    /// doc.text("t").insert(5, " two")?;
    /// let mut old = Doc::new();
    /// old.import(&doc.export(ExportMode::SnapshotAt(&v1))?)?;
    /// assert_eq!(old.text("t").to_string(), "draft");
    /// assert_eq!(old.frontiers(), v1);
    /// # Ok::<(), weft::Error>(())
    /// ```
    SnapshotAt(&'a Frontiers),
    /// The current state of every text plus only the history after a
    /// version (the *root*), as a snapshot: much smaller than a full one
    /// for a long history (B4: about a third). A document opened from it
    /// ([`Doc::shallow_since`] names the root):
    /// - edits, merges ops whose causal past holds the whole root (from
    ///   any peer), and exports its state (a shallow snapshot again) and
    ///   the ops any version holding the root lacks;
    /// - shows, forks, diffs, snapshots and re-trims versions that hold
    ///   the root, rebuilt from the root (the root's chars deleted since
    ///   are kept with their text for that);
    /// - refuses with [`crate::Error::TrimmedHistory`] what needs the
    ///   trimmed history: ops concurrent to the root (import), updates
    ///   for versions without it (export), versions without it
    ///   ([`Doc::checkout`], [`Doc::fork_at`], [`Doc::diff`],
    ///   [`ExportMode::SnapshotAt`], [`Doc::revert_to`]), and versions
    ///   holding ops concurrent to the root that the snapshot kept (a
    ///   rebuilt version cannot place them; [`Doc::diff`] to the latest
    ///   version then compares texts instead).
    ///
    /// Cancels (undo and redo, [`Doc::cancel`]) made before the root show
    /// in the root's state; those after it, of ops after it, are kept
    /// history like any op (such a snapshot is format version 7). A
    /// root that a later cancel reaches below (an undo or redo, made
    /// after the root, of an op made before it) cannot be written, since
    /// the root's ops are gone: the export returns
    /// [`crate::Error::Unsupported`] (a root after that cancel, or the
    /// latest version, never is refused), and a shallow document
    /// refuses such a cancel from a peer, or made locally, with
    /// [`crate::Error::TrimmedHistory`], as it refuses ops concurrent to
    /// its root.
    ///
    /// Pass [`Doc::frontiers`] to trim everything; an older version keeps
    /// the ops after it, so peers still editing from there can merge.
    /// It is made small rather than fast to write: its texts are LZ4
    /// from a denser (slower) compressor, so reading the text after
    /// import costs what it does from a full snapshot, and the rest is
    /// deflate (read when the document loads).
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, Error, ExportMode};
    ///
    /// let mut a = Doc::new();
    /// a.text("t").insert(0, "Hello")?;
    /// let old = a.version();
    /// a.text("t").insert(5, " world")?;
    /// let bytes = a.export(ExportMode::ShallowSnapshot(&a.frontiers()))?;
    ///
    /// let mut b = Doc::new();
    /// b.import(&bytes)?;
    /// assert_eq!(b.text("t").to_string(), "Hello world");
    /// assert_eq!(b.shallow_since(), Some(a.frontiers()));
    /// b.text("t").insert(11, "!")?;
    /// a.import(&b.export(ExportMode::Updates { from: &a.version() })?)?;
    /// assert_eq!(a.text("t").to_string(), "Hello world!");
    /// // What b trimmed is gone:
    /// assert_eq!(
    ///     b.export(ExportMode::Updates { from: &old }),
    ///     Err(Error::TrimmedHistory)
    /// );
    /// # Ok::<(), weft::Error>(())
    /// ```
    ShallowSnapshot(&'a Frontiers),
}

/// What [`Doc::import`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportStatus {
    /// Ops this import added to the document (including earlier pending
    /// updates that it unblocked), one span per change (per peer for a
    /// snapshot imported lazily into an empty document).
    pub applied: Vec<IdSpan>,
    /// Ops of this import that the document holds back because ops they
    /// build on are missing; they are applied by the import that brings
    /// the missing ops. [`Doc::pending_spans`] lists every held-back op.
    pub pending: Vec<IdSpan>,
}

/// A collaborative document: named texts plus the history of every edit.
///
/// Each document edits as one peer ([`Doc::peer_id`]). Local edits (through
/// [`Doc::text`]) are applied at once and recorded as ops in an open
/// *change*; [`Doc::commit`] closes it (export and import do so
/// implicitly). Documents sync by exchanging updates:
/// [`Doc::export`] with [`ExportMode::Updates`] writes what another version
/// lacks and [`Doc::import`] merges it. Merging is commutative, associative
/// and idempotent, so peers that saw the same ops hold the same text.
///
/// `Doc` is `Send` and `Sync`: it owns plain data, and editing it needs
/// `&mut`, so no lock is taken per edit.
///
/// # Examples
///
/// ```
/// use weft::{Doc, ExportMode, VersionVector};
///
/// let mut alice = Doc::new();
/// alice.set_peer_id(1)?;
/// alice.text("t").insert(0, "Hello")?;
///
/// let mut bob = alice.fork();
/// bob.set_peer_id(2)?;
/// bob.text("t").insert(5, " world")?;
/// alice.text("t").insert(0, "Oh, ")?;
///
/// // Exchange what each lacks.
/// let to_bob = alice.export(ExportMode::Updates { from: &bob.version() })?;
/// let to_alice = bob.export(ExportMode::Updates { from: &alice.version() })?;
/// bob.import(&to_bob)?;
/// alice.import(&to_alice)?;
/// assert_eq!(alice.text("t").to_string(), "Oh, Hello world");
/// assert_eq!(bob.text("t").to_string(), "Oh, Hello world");
/// assert_eq!(alice.version(), bob.version());
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Doc {
    peer: PeerId,
    log: OpLog,
    texts: TextTable,
    /// The state of every map, by the log's map index.
    maps: MapTable,
    /// Updates waiting for ops they build on.
    pending: Pending,
    /// Reused by deletes (see [`Text`]).
    scratch: Vec<Range<Seq>>,
    style: StyleConfig,
    /// A snapshot imported lazily: set while its history or some text's
    /// tree is not loaded yet (then `log` is empty, or those texts are
    /// marked unloaded).
    lazy: Option<Box<LazyDoc>>,
    /// Subscribers to change events and local updates (a clone starts
    /// with none).
    observers: Observers,
    /// The changes of the open local change, while someone subscribes.
    draft: Option<Box<Draft>>,
    /// While an old version is checked out (see [`Doc::checkout`]), the
    /// latest document: its history, texts and pending set (its other
    /// fields unused). This document's own state is then that version's.
    detached: Option<Box<Doc>>,
    /// How far exports included the open change (see `sent.rs`).
    sent: sent::Sent,
    /// The text [`Doc::text`] last gave for a reserved name.
    refused: Option<Box<containers::Refused>>,
}

impl Default for Doc {
    fn default() -> Self {
        Self::new()
    }
}

/// A random peer id (never the reserved `u64::MAX`).
fn random_peer_id() -> PeerId {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    loop {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
        h.write_u128(crate::platform::system_now_nanos());
        if let Some(bits) = crate::platform::entropy() {
            h.write_u64(bits);
        }
        let id = h.finish();
        if id != PeerId::MAX {
            return id;
        }
    }
}

impl Doc {
    /// An empty document with a random peer id.
    pub fn new() -> Doc {
        Doc {
            peer: random_peer_id(),
            log: OpLog::default(),
            texts: TextTable::default(),
            maps: MapTable::default(),
            pending: Pending::default(),
            scratch: Vec::new(),
            style: StyleConfig::default(),
            lazy: None,
            observers: Observers::default(),
            draft: None,
            detached: None,
            sent: sent::Sent::default(),
            refused: None,
        }
    }

    /// Sets the expand rule of each style key for marks made from now on
    /// (see [`StyleConfig`]; a new document uses
    /// [`StyleConfig::default`]). Set it once, right after creating the
    /// document: the rule travels with each mark, so marks made earlier
    /// and marks from peers keep theirs.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Delta, Doc, ExpandType, StyleConfig};
    ///
    /// let mut doc = Doc::new();
    /// let mut config = StyleConfig::default();
    /// config.set("bold", ExpandType::None);
    /// doc.config_text_style(config);
    /// let mut text = doc.text("t");
    /// text.insert(0, "ab")?;
    /// text.mark(0..2, "bold", true)?;
    /// text.insert(2, "c")?; // not bold: bold no longer expands
    /// assert_eq!(text.to_delta(), vec![Delta::insert_with("ab", [("bold", true)]), Delta::insert("c")]);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn config_text_style(&mut self, config: StyleConfig) {
        self.style = config;
    }

    /// The style configuration in force.
    pub fn text_style_config(&self) -> &StyleConfig {
        &self.style
    }

    /// The peer id this document edits as.
    pub fn peer_id(&self) -> PeerId {
        self.peer
    }

    /// Makes later edits come from `peer` (commits the open change first).
    /// Two documents must never edit concurrently with the same peer id.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPeerId`] for the reserved id `u64::MAX`.
    pub fn set_peer_id(&mut self, peer: PeerId) -> Result<()> {
        if peer == PeerId::MAX {
            return Err(Error::InvalidPeerId(peer));
        }
        self.commit();
        if peer != self.peer {
            self.sent.reset();
        }
        self.peer = peer;
        Ok(())
    }

    /// A deep copy with the same history and state and a new random peer id.
    /// A fork of a checked-out document (see [`Doc::checkout`]) shows the
    /// same version; [`Doc::fork_at`] gives an editable copy of a version.
    pub fn fork(&self) -> Doc {
        // The fork carries the open change away like an export: a message
        // given to it later must not cover ops that replicas of the fork
        // already have (see `sent.rs`).
        if self.detached.is_none() {
            self.note_sent(self, &ExportMode::Snapshot);
        }
        let mut doc = self.clone();
        doc.commit();
        doc.peer = random_peer_id();
        doc.sent.reset();
        doc
    }

    /// Closes the open change: later edits start a new one. Cheap; a no-op
    /// when nothing was edited since the last commit. Subscribers (see
    /// [`Doc::subscribe`]) hear of the change now.
    pub fn commit(&mut self) {
        self.commit_as(EventTrigger::Local, None);
    }

    /// The version of the document (includes the open change).
    pub fn version(&self) -> VersionVector {
        match &self.lazy {
            Some(lazy) if !lazy.head_loaded() => lazy.meta().version.clone(),
            _ => self.log.version(),
        }
    }

    /// The heads of the document's history (includes the open change).
    pub fn frontiers(&self) -> Frontiers {
        match &self.lazy {
            Some(lazy) if !lazy.head_loaded() => lazy.meta().frontiers.clone(),
            _ => self.log.frontiers(),
        }
    }

    /// Loads everything a lazily imported snapshot still holds back: the
    /// history and every text's tree. Operations that need them (merges,
    /// exports, marking) call it; typing into a text without marks needs
    /// only that text's tree and the change table, so the first keystroke
    /// after opening a snapshot decodes no history. Calling it early moves
    /// that cost (about a millisecond for a document with 260,000 ops) out
    /// of the first operation that needs it. O(ops + items).
    ///
    /// # Errors
    ///
    /// [`Error::Inconsistent`], [`Error::Malformed`], [`Error::UnknownId`]
    /// or [`Error::HistoryFull`] when the snapshot's body is inconsistent — which its document
    /// checksum rules out for anything Weft wrote, so only a body forged
    /// with a recomputed checksum does this. The document is unchanged
    /// then (still readable as imported).
    pub fn load(&mut self) -> Result<()> {
        self.settle();
        let Some(lazy) = self.lazy.as_deref_mut() else {
            return Ok(());
        };
        lazy.load_history(&mut self.log)?;
        if !self.log.map_sets().is_empty() {
            self.maps = MapTable::from_log(&self.log);
        }
        for (i, state) in self.texts.iter_mut().enumerate() {
            lazy.finish_text(&self.log, state, TextIdx::new(i as u32))?;
        }
        if lazy.is_done() {
            self.lazy = None;
        }
        Ok(())
    }

    /// Whether parts of a lazily imported snapshot are not loaded yet
    /// (see [`Doc::load`]).
    /// A read that loaded everything on the side (see [`Doc::get_text`])
    /// counts as loaded.
    pub fn is_lazy(&self) -> bool {
        self.lazy
            .as_deref()
            .is_some_and(|l| !l.is_done() && !matches!(l.full.get(), Some(Ok(_))))
    }

    /// The text called `name`, created empty if the document has none yet.
    /// O(number of texts).
    ///
    /// After a lazy snapshot import, reading a text comes straight from
    /// the snapshot; its first edit builds its tree (see [`Doc::load`]).
    /// A text with marks in a snapshot that does not store its styles
    /// (before format version 5) is built here, with the history.
    ///
    /// After [`Doc::delete_text`], the name starts a new text. Names
    /// starting with U+0001 are reserved (that is how deleted texts are
    /// kept): such a handle shows an empty text, none of the document's,
    /// and every edit through it returns [`Error::ReservedKey`].
    #[inline]
    pub fn text(&mut self, name: &str) -> Text<'_> {
        if crate::oplog::is_reserved(name) {
            return self.refused_text(name);
        }
        let index = if self.lazy.is_some() {
            self.lazy_text_index(name)
        } else {
            let raw = containers::resolve(&self.log, &self.maps, Kind::Text, name);
            self.texts.find_or_create(&raw)
        };
        let lazy = self.lazy.as_deref_mut().map(|l| l as &mut dyn TextSource);
        let draft = events::open_draft(&mut self.draft, &self.observers);
        Text::new(
            &mut self.log,
            self.texts.get_mut(index).expect("just found or created"),
            index,
            self.peer,
            &mut self.scratch,
            &self.style,
            lazy,
            draft,
        )
    }

    /// [`Doc::text`]'s index of text `name` while a lazily imported
    /// snapshot is around: takes over a copy a read loaded, then builds
    /// the text if it has marks (see [`Doc::build_styled`]).
    #[cold]
    #[inline(never)]
    fn lazy_text_index(&mut self, name: &str) -> TextIdx {
        self.settle();
        let raw = containers::resolve(&self.log, &self.maps, Kind::Text, name);
        let index = self.texts.find_or_create(&raw);
        if self.lazy.is_some() {
            self.build_styled(index);
        }
        index
    }

    /// Builds text `index` if reading it needs the history (see
    /// [`Doc::needs_history_to_read`]). On failure the text stays
    /// readable, without styles, and its first edit reports the error.
    /// Drops the snapshot once a text handle's edits loaded its last
    /// part.
    #[cold]
    fn build_styled(&mut self, index: TextIdx) {
        let needs = self
            .texts
            .get(index)
            .is_some_and(|state| self.needs_history_to_read(state));
        if let (Some(lazy), Some(state)) = (self.lazy.as_deref_mut(), self.texts.get_mut(index)) {
            if needs {
                // An error is reported by the text's first edit.
                let _ = lazy.load_text(&mut self.log, state, index, Need::Everything);
            }
        }
        if self.lazy.as_deref().is_some_and(LazyDoc::is_done) {
            self.lazy = None;
        }
    }

    /// Names of the document's texts, in order of creation (deleted ones
    /// left out: see [`Doc::delete_text`]; a text created again after a
    /// delete counts as created then). O(names shown), however often
    /// texts were deleted and created again.
    pub fn text_names(&self) -> impl Iterator<Item = &str> + '_ {
        if !self.texts.has_reserved() && !self.log.map_names().has_reserved() {
            // Nothing deleted, no reserved names: every text shows.
            return self
                .texts
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .into_iter();
        }
        let shown = self.shown_names(Kind::Text, self.texts.public_names(), |raw| {
            self.texts.find(raw).map(|i| i.as_usize())
        });
        shown.into_iter()
    }

    /// Length of text `name` in `unit`, without creating it (0 if absent).
    pub fn text_len(&self, name: &str, unit: Unit) -> usize {
        self.shown_text(name)
            .and_then(|i| self.texts.get(i))
            .map_or(0, |t| t.visible_len(unit) as usize)
    }

    /// Encodes part of the document, the open change included (later
    /// edits may extend that change: a peer that received part of it
    /// merges the rest like any change; a message that
    /// [`Doc::commit_with`] gives it later covers only the ops sent after
    /// this export). Needs only `&self`; a lazily
    /// imported snapshot is loaded on the side for it (see
    /// [`Doc::get_text`]). O(size of the exported ops + log of the
    /// history).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownOp`] for [`ExportMode::SnapshotAt`] a version that
    /// names an op this document does not have. In a shallow document,
    /// [`Error::TrimmedHistory`] for what needs its trimmed history (see
    /// [`ExportMode::ShallowSnapshot`]). [`Error::Unsupported`] for an
    /// [`ExportMode::ShallowSnapshot`] whose root a later cancel reaches
    /// below. After a lazy snapshot import, as [`Doc::load`]; nothing
    /// else.
    pub fn export(&self, mode: ExportMode<'_>) -> Result<Vec<u8>> {
        let doc = self.latest().loaded()?;
        let bytes = match mode {
            ExportMode::Updates { from } => {
                doc.log.check_trimmed(from)?;
                encoding::encode_updates(&doc.log, &doc.texts, from, None)
            }
            ExportMode::Snapshot => {
                let pending: Vec<&[u8]> = doc.pending.iter().map(|p| &*p.bytes).collect();
                encoding::encode_snapshot(&doc.log, &doc.texts, &pending)
            }
            ExportMode::UpdatesInRange(spans) => {
                let pieces = doc.log.pieces_in_spans(spans);
                doc.log.check_pieces(&pieces)?;
                encoding::encode_pieces(&doc.log, &doc.texts, &pieces)
            }
            ExportMode::SnapshotAt(frontiers) => {
                let old = doc.doc_at(&doc.log.frontiers_to_vv(frontiers)?, false)?;
                encoding::encode_snapshot(&old.log, &old.texts, &[])
            }
            ExportMode::ShallowSnapshot(frontiers) => doc.shallow_snapshot(frontiers)?,
        };
        if self.detached.is_none() {
            self.note_sent(doc, &mode);
        }
        Ok(bytes)
    }

    /// Merges bytes written by [`Doc::export`] into this document (commits
    /// the open change first). Ops the document already has are skipped; an
    /// update whose dependencies are missing is kept pending and applied
    /// automatically once they arrive.
    ///
    /// Atomic: on error the document (texts, version, pending set) is
    /// exactly as before.
    ///
    /// Commit messages and timestamps (see [`Doc::commit_with`]) that come
    /// with the ops are kept only for ops this import adds, as one commit
    /// of them that overlaps no commit the document knows (but the same
    /// commit, received in parts); any other is ignored, not an error: a
    /// peer cannot attach messages to ops the document holds, nor make its
    /// exports unreadable, and the ops import all the same.
    ///
    /// # Errors
    ///
    /// [`Error::EmptyInput`], [`Error::BadMagic`] for bytes that are not a
    /// Weft export; [`Error::UnexpectedEof`], [`Error::ChecksumMismatch`],
    /// [`Error::Malformed`] (a field that does not decode),
    /// [`Error::Inconsistent`] (parts that contradict each other) for
    /// damaged or truncated ones;
    /// [`Error::UnsupportedVersion`], [`Error::UnsupportedMode`] for exports
    /// this build cannot read; [`Error::InvalidPeerId`] for a reserved peer id;
    /// [`Error::UnknownId`] when an op refers to an op outside its declared
    /// history; [`Error::HistoryFull`] when the document cannot hold more
    /// ops.
    pub fn import(&mut self, bytes: &[u8]) -> Result<ImportStatus> {
        self.import_from(bytes, None)
    }

    /// [`Doc::import`], and then the change event (if someone subscribes
    /// and something was applied) with `origin`.
    fn import_from(&mut self, bytes: &[u8], origin: Option<&str>) -> Result<ImportStatus> {
        if let Some(latest) = self.detached.as_deref_mut() {
            // Shown after returning (see `Doc::checkout`).
            return latest.import_from(bytes, None);
        }
        let update = match encoding::decode(bytes)? {
            Decoded::Update(update) => update,
            Decoded::Snapshot(snapshot) => {
                let mut draft = self.new_draft();
                let status = self.import_snapshot(snapshot, draft.as_mut())?;
                self.log.keep_deleters();
                self.emit_import(draft, &status, origin);
                return Ok(status);
            }
        };
        self.load()?;
        self.commit();
        let mut draft = self.new_draft();
        let status = self.import_update(update, || bytes.into(), draft.as_mut())?;
        // The import reads its own delete runs, not the next undo.
        self.log.keep_deleters();
        self.emit_import(draft, &status, origin);
        Ok(status)
    }

    /// The parts of this document an import changes.
    pub(crate) fn inbox(&mut self) -> merge::Inbox<'_> {
        merge::Inbox {
            log: &mut self.log,
            texts: &mut self.texts,
            maps: &mut self.maps,
            pending: &mut self.pending,
        }
    }

    /// Applies a decoded update through [`merge::Inbox::import`]. The
    /// document must be loaded and committed.
    fn import_update(
        &mut self,
        update: Update,
        bytes: impl FnOnce() -> Box<[u8]>,
        draft: Option<&mut Draft>,
    ) -> Result<ImportStatus> {
        let merge::Imported { applied, pending } = self.inbox().import(update, bytes, draft)?;
        Ok(ImportStatus { applied, pending })
    }

    /// One past the last counter of `peer` this document knows
    /// (committed ops; from the snapshot's meta while lazy).
    fn known_end(&self, peer: PeerId) -> Counter {
        match &self.lazy {
            Some(lazy) if !lazy.head_loaded() => lazy.meta().version.get(peer),
            _ => self.log.known_end(peer),
        }
    }

    /// Imports a checked snapshot: lazily into an empty document, else
    /// merged like an update.
    fn import_snapshot(
        &mut self,
        snapshot: Snapshot,
        mut draft: Option<&mut Draft>,
    ) -> Result<ImportStatus> {
        self.commit();
        let empty = self.lazy.is_none()
            && self.log.next_seq() == 0
            && self.pending.is_empty()
            && self.texts.iter().all(|t| t.item_count() == 0);
        if !empty {
            // Load it fully on the side, then merge what this doc lacks,
            // straight from the side's history (no bytes in between).
            let mut side = Doc::new();
            side.import_snapshot(snapshot, None)?;
            side.load()?;
            self.load()?;
            let version = self.version();
            let update = Update::from_log(&side.log, &side.texts, &version, None)?;
            let mut status = self.import_update(
                update,
                || encoding::encode_updates(&side.log, &side.texts, &version, None).into(),
                draft.as_deref_mut(),
            )?;
            // Texts the snapshot names but no op of its touches, and its
            // pending updates; only once the import succeeded (a failed
            // one changes nothing).
            for t in side.texts.iter() {
                self.texts.find_or_create(t.name());
            }
            for Parked { update, bytes } in side.pending.take_all() {
                // An invalid one is dropped, as when it is released.
                if let Ok(more) = self.import_update(update, || bytes, draft.as_deref_mut()) {
                    status.applied.extend(more.applied);
                    status.pending.extend(more.pending);
                }
            }
            return Ok(status);
        }
        // Every pending update still waits at the snapshot's version (no
        // parked update is ready); one that does not was forged.
        let pending_spans = merge::park_snapshot_pending(
            &mut self.pending,
            &snapshot.pending,
            &snapshot.meta.version,
        )?;
        let mut doc_index = Vec::with_capacity(snapshot.meta.texts.len());
        for (i, t) in snapshot.meta.texts.iter().enumerate() {
            let index = self.texts.find_or_create(&t.name);
            if let Some(state) = self.texts.get_mut(index) {
                state.set_unloaded(Unloaded {
                    index: i as u32,
                    counts: t.counts,
                });
            }
            doc_index.push(index);
        }
        let applied = snapshot
            .meta
            .version
            .iter()
            .filter(|&(_, end)| end > 0)
            .map(|(peer, end)| IdSpan::new(peer, 0..end))
            .collect();
        let has_maps = !snapshot.map_names.is_empty() || snapshot.has_embeds();
        self.lazy = Some(Box::new(LazyDoc::new(snapshot, doc_index.clone())));
        if has_maps {
            self.load_maps_at_import()?;
        }
        if let Some(draft) = draft {
            self.snapshot_event(&doc_index, draft);
        }
        Ok(ImportStatus {
            applied,
            pending: pending_spans,
        })
    }

    /// Spans of the ops held in pending updates that the document lacks.
    /// O(size of the pending set).
    pub fn pending_spans(&self) -> Vec<IdSpan> {
        let latest = self.latest();
        latest.pending.spans(|p| latest.known_end(p))
    }
}
