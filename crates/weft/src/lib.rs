//! Weft: a rich-text CRDT for documents that several people edit at once,
//! online or offline, and merge without conflicts.
//!
//! # The model
//!
//! - A [`Doc`] holds named texts and the full history of edits. Each
//!   document edits as one **peer** ([`PeerId`]); every op it makes gets the
//!   next counter of that peer, so ops are named by [`OpId`] `(peer,
//!   counter)` everywhere.
//! - Local edits are applied at once and recorded in an open **change**: a
//!   run of the peer's consecutive ops on top of the version it had seen.
//!   [`Doc::commit`] closes it; export and import do so implicitly.
//! - **Versions** are named by a [`VersionVector`] (per peer, how many of
//!   its ops are included) or by [`Frontiers`] (the heads of the history).
//!   Both encode to a few checksummed bytes ([`VersionVector::encode`]) for
//!   a sync handshake.
//! - **Syncing**: `a.export(ExportMode::Updates { from: &b.version() })`
//!   writes every op `b` lacks; `b.import(&bytes)` merges them. Importing
//!   is idempotent and order-independent; an update whose dependencies are
//!   missing waits until they arrive.
//! - **Text** positions count chars (Unicode scalar values); `_utf8` and
//!   `_utf16` variants take byte and UTF-16 offsets.
//!
//! - **Rich text**: [`Text::mark`] gives a range a style (`bold: true`,
//!   `link: "https://.."`), [`Text::unmark`] removes it, and
//!   [`Text::to_delta`] / [`Text::apply_delta`] read and write Quill-style
//!   [`Delta`]s. How a mark grows when text is typed at its edges is its
//!   key's [`ExpandType`] (see [`style`] and [`Doc::config_text_style`]).
//!
//! - **Maps and embeds**: [`Doc::map`] gives a [`Map`] (string keys to
//!   [`Value`]s; concurrent writes of a key converge on the greatest
//!   (Lamport, peer), deletes included) for what is not text;
//!   [`Text::insert_embed`] puts an image or a mention at one position of
//!   a text, a [`Delta::Embed`] (Quill's embed) in deltas.
//!
//! - **Blocks**: [`Text::split_block`] inserts a block marker that ends a
//!   block (a paragraph, a heading, a list item) and carries its
//!   attributes, as Quill's `"\n"` carries its line format;
//!   [`Text::update_block`] sets them per key (last writer wins),
//!   [`Text::join_block`] deletes the marker, [`TextRef::blocks`] reads the
//!   text as blocks. Deltas show a marker as a [`Delta::Block`] (Quill's
//!   `{"insert": "\n", "attributes": {...}}` in JSON), and `apply_delta`
//!   maps Quill's line formats onto markers.
//!
//! - **Deleting containers**: [`Doc::delete_text`] and [`Doc::delete_map`]
//!   delete a text or a map (one op in the history); the name then starts
//!   a new one, and edits concurrent to the delete stay hidden with the
//!   deleted container.
//!
//! - **Change events**: [`Doc::subscribe`] hears, after each local commit
//!   and each import that applied something, a [`DocEvent`] naming its
//!   [`EventTrigger`], the origin given with the commit or import, and a
//!   Quill change delta per changed text ([`TextDiff::apply_to`] keeps an
//!   editor's copy equal to the document), in chars or UTF-16 units, and
//!   the keys each map changed ([`MapDiff`]).
//!   [`Doc::subscribe_local_update`] hands over each local commit's
//!   update bytes, to broadcast.
//! - **Stable cursors**: [`Text::cursor`] gives a [`Cursor`] that names a
//!   char, so it follows that char through every edit and merge;
//!   [`Doc::cursor_pos`] resolves it in O(log n). It encodes to a few
//!   bytes for peers.
//! - **Undo**: an [`UndoManager`] undoes and redoes this peer's steps
//!   (text, marks and unmarks), leaving other peers' edits in place, as
//!   new ops that sync like any edit.
//! - **Presence**: an [`EphemeralStore`] holds per-key state that peers
//!   share while online (a user's name, their encoded [`Cursor`]s) outside
//!   any document's history: the latest write per key wins and entries
//!   expire after a timeout. It syncs through its own bytes
//!   ([`EphemeralStore::encode_all`], [`EphemeralStore::apply`]) and tells
//!   subscribers what changed.
//!
//! Concurrent inserts at one place are ordered by FugueMax (left and right
//! origins), so two people typing at the same spot never interleave, typing
//! forwards or backwards. Deleted chars stay as tombstones so that later
//! concurrent edits can still find their place. A mark's two anchors are
//! glued to chars, so text typed concurrently at its edge is inside or
//! outside by the mark's rule, never by which peer id is larger.
//!
//! Internally every text is a b-tree (`generic-btree`) of run-length encoded
//! items with a cached cursor, so typing near the previous edit costs O(1)
//! and any other edit O(log n).
//!
//! # Example
//!
//! ```
//! use weft::{Doc, ExportMode, VersionVector};
//!
//! let mut a = Doc::new();
//! a.text("notes").insert(0, "Hello world")?;
//! let mut b = Doc::new();
//! b.import(&a.export(ExportMode::Updates { from: &VersionVector::new() })?)?;
//!
//! // Concurrent edits on both sides...
//! a.text("notes").insert(5, ",")?;
//! b.text("notes").insert(11, "!")?;
//!
//! // ...then each side imports what it lacks.
//! let for_b = a.export(ExportMode::Updates { from: &b.version() })?;
//! let for_a = b.export(ExportMode::Updates { from: &a.version() })?;
//! a.import(&for_a)?;
//! b.import(&for_b)?;
//! assert_eq!(a.text("notes").to_string(), "Hello, world!");
//! assert_eq!(b.text("notes").to_string(), "Hello, world!");
//! # Ok::<(), weft::Error>(())
//! ```
//!
//! # What Weft does not do yet
//!
//! - Undo is by position: text another peer typed between chars this peer
//!   deleted comes back on one side of the restored text, not in place,
//!   and a char both peers deleted comes back on undo.
//! - History: [`Doc::diff`] between versions costs O(size of the older
//!   one), not O(change); a shallow document cannot show versions that
//!   hold ops concurrent to its root.
//! - A deleted text or map cannot be brought back as it was (with the
//!   edits concurrent to its delete): undo restores a copy of its content.
//!
//! # Errors
//!
//! Every function that takes a position, range or bytes returns
//! [`Result`]; nothing a caller or a remote peer sends makes Weft panic, and
//! a failed import leaves the document as it was. A snapshot is imported
//! lazily once its document checksum holds; a body forged with a
//! recomputed checksum can only be found out when it loads (see
//! [`Doc::load`]), and then the operation that loads it returns the error
//! and changes nothing.
//!
//! # Features
//!
//! - `serde`: `Serialize` / `Deserialize` for [`Value`], [`Delta`] (as
//!   Quill's JSON), [`ExpandType`], [`Cursor`], [`VersionVector`] (a map
//!   from peer to counter) and [`Frontiers`] (a list of `[peer, counter]`).
//! - `small-nodes`: for Weft's own tests only: tiny b-tree leaves and
//!   snapshot blocks, so that short tests cross node boundaries.

#![forbid(unsafe_code)]

// The modules in layers, lowest first. A module uses only modules of
// lower layers, never one of its own layer or above, so no two modules
// need each other (the test in `layers.rs` reads this list and checks
// every `crate::` path of the library's code against it):
//
// layer 1: id unit platform
// layer 2: error
// layer 3: bytes value version
// layer 4: style
// layer 5: cursor oplog
// layer 6: event
// layer 7: map text
// layer 8: merge
// layer 9: encoding
// layer 10: doc
// layer 11: presence undo

mod bytes;
mod cursor;
mod doc;
mod encoding;
mod error;
mod event;
mod id;
#[cfg(test)]
mod layers;
mod map;
mod merge;
mod oplog;
pub mod platform;
mod presence;
pub mod style;
mod text;
mod undo;
mod unit;
mod value;
mod version;

pub use cursor::{Cursor, Side};
pub use doc::{ChangeMeta, CommitOptions, Doc, ExportMode, ImportStatus};
pub use error::{Error, Result};
pub use event::{DocEvent, EventTrigger, MapDiff, Subscription, TextDiff};
pub use id::{Counter, IdSpan, Lamport, OpId, PeerId};
pub use map::{Map, MapRef};
pub use presence::{EphemeralEventTrigger, EphemeralStore, EphemeralStoreEvent};
pub use style::{Attributes, Delta, ExpandType, StyleConfig};
pub use text::{Block, Text, TextRef};
pub use undo::UndoManager;
pub use unit::Unit;
pub use value::Value;
pub use version::{Frontiers, VersionVector};
/// The key-value table snapshots are stored in (its error type appears in
/// [`Error::Storage`]).
pub use weft_kv;

/// Every `rust` block of the README compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
