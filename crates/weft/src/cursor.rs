//! [`Cursor`]: a position that names a char, not an index, so it stays put
//! through every edit, merge and undo.

use crate::bytes::{open_framed, write_bytes, write_checksum, write_varint};
use crate::error::{Error, Result};
use crate::id::{Counter, OpId, PeerId};

/// Which neighbour of a position a [`Cursor`] sticks to (as Yrs'
/// `Assoc`).
///
/// Text inserted exactly at the cursor's position goes after a
/// `Before` cursor and before an `After` one: a caret is usually
/// `After` (text a peer types right where it is pushes it on, like the
/// char after it); the end of a selection that should not grow when a
/// peer types at its end is `Before`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Side {
    /// Sticks to the char before the position (at the start of the text:
    /// to the start).
    Before,
    /// Sticks to the char after the position (at the end of the text: to
    /// the end).
    #[default]
    After,
}

/// A stable position in a text: it names the char next to it (see
/// [`Side`]), so it follows that char through any concurrent or later
/// insert, delete, mark and merge. When its char is deleted it resolves to
/// where the char would be. Made by [`crate::Text::cursor`] (or
/// [`crate::TextRef::cursor`]), resolved by [`crate::Doc::cursor_pos`] in
/// O(log n), on any replica that has the char. It encodes to a few bytes
/// ([`Cursor::encode`]; with the `serde` feature also through serde), so
/// it can travel to peers, e.g. in presence state.
///
/// # Examples
///
/// ```
/// use weft::{Doc, ExportMode, Side};
///
/// let mut alice = Doc::new();
/// alice.text("t").insert(0, "aaaa")?;
/// let caret = alice.text("t").cursor(2, Side::After)?;
/// let mut bob = alice.fork();
/// bob.text("t").insert(0, "a")?; // a peer types before the caret
/// alice.import(&bob.export(ExportMode::Updates { from: &alice.version() })?)?;
/// assert_eq!(alice.cursor_pos(&caret)?, 3); // the caret moved with its char
///
/// // It travels as bytes.
/// let bytes = caret.encode();
/// assert_eq!(bob.cursor_pos(&weft::Cursor::decode(&bytes)?)?, 3);
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(into = "CursorRepr", try_from = "CursorRepr")
)]
pub struct Cursor {
    text: String,
    /// The char it sticks to; `None` for the start (with `Before`) or the
    /// end (with `After`) of the text.
    id: Option<OpId>,
    side: Side,
}

/// First byte of an encoded cursor.
const MAGIC: u8 = 0xC7;
/// Format version of an encoded cursor.
const VERSION: u8 = 1;
/// Flag bits of an encoded cursor.
const AFTER: u8 = 1;
const HAS_ID: u8 = 2;

impl Cursor {
    pub(crate) fn new(text: &str, id: Option<OpId>, side: Side) -> Cursor {
        Cursor {
            text: text.to_owned(),
            id,
            side,
        }
    }

    /// The name of the text it points into.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The char it sticks to, or `None` for the start (with
    /// [`Side::Before`]) or the end (with [`Side::After`]) of the text.
    pub fn id(&self) -> Option<OpId> {
        self.id
    }

    /// Which neighbour it sticks to.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The cursor as bytes: a magic byte, a version, flags, the text name,
    /// the char's id and a 32-bit checksum (about 8 bytes plus the name).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![MAGIC, VERSION];
        let mut flags = if self.side == Side::After { AFTER } else { 0 };
        if self.id.is_some() {
            flags |= HAS_ID;
        }
        out.push(flags);
        write_bytes(&mut out, self.text.as_bytes());
        if let Some(id) = self.id {
            write_varint(&mut out, id.peer);
            write_varint(&mut out, u64::from(id.counter));
        }
        write_checksum(&mut out);
        out
    }

    /// Reads bytes written by [`Cursor::encode`].
    ///
    /// # Errors
    ///
    /// [`Error::EmptyInput`] or [`Error::BadMagic`] for bytes that are not
    /// a cursor,
    /// [`Error::UnsupportedVersion`], [`Error::UnexpectedEof`] when
    /// truncated, [`Error::ChecksumMismatch`] when damaged,
    /// [`Error::Malformed`] or [`Error::InvalidPeerId`] for inconsistent
    /// contents.
    pub fn decode(bytes: &[u8]) -> Result<Cursor> {
        let mut r = open_framed(bytes, MAGIC, VERSION)?;
        let flags = r.u8()?;
        if flags & !(AFTER | HAS_ID) != 0 {
            return Err(r.malformed("cursor flags"));
        }
        let text = std::str::from_utf8(r.bytes()?)
            .map_err(|_| r.malformed("cursor text name"))?
            .to_owned();
        let id = if flags & HAS_ID != 0 {
            let peer: PeerId = r.varint()?;
            let counter: Counter = r.u32("cursor counter")?;
            if peer == PeerId::MAX {
                return Err(Error::InvalidPeerId(peer));
            }
            Some(OpId::new(peer, counter))
        } else {
            None
        };
        if !r.is_empty() {
            return Err(r.malformed("bytes after the cursor"));
        }
        let side = if flags & AFTER != 0 {
            Side::After
        } else {
            Side::Before
        };
        Ok(Cursor { text, id, side })
    }
}

/// How a [`Cursor`] looks to serde: the text name, the char's id as
/// `[peer, counter]` (or none), and the side.
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
struct CursorRepr {
    text: String,
    id: Option<(PeerId, Counter)>,
    side: Side,
}

#[cfg(feature = "serde")]
impl From<Cursor> for CursorRepr {
    fn from(c: Cursor) -> CursorRepr {
        CursorRepr {
            text: c.text,
            id: c.id.map(|id| (id.peer, id.counter)),
            side: c.side,
        }
    }
}

#[cfg(feature = "serde")]
impl TryFrom<CursorRepr> for Cursor {
    type Error = Error;

    fn try_from(c: CursorRepr) -> Result<Cursor> {
        if let Some((peer, _)) = c.id {
            if peer == PeerId::MAX {
                return Err(Error::InvalidPeerId(peer));
            }
        }
        Ok(Cursor {
            text: c.text,
            id: c.id.map(|(peer, counter)| OpId::new(peer, counter)),
            side: c.side,
        })
    }
}
