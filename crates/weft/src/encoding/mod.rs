//! Binary encodings of a document's history.
//!
//! `docs/FORMAT.md` in the repository is the reference of every layout
//! below, with each version the decoders still read, the codecs, the
//! checksums and worked examples; these notes say why the layouts are as
//! they are. A change of a layout changes both.
//!
//! # The updates format (mode 1, format versions 1 to 5)
//!
//! An update carries every op the receiver lacks, grouped in changes, in an
//! order where each change comes after the changes it depends on.
//!
//! ```text
//! header (16 bytes)
//!   0   4  magic            "weft" (77 65 66 74)
//!   4   1  format version   1, or 2 when the body ends with the commit
//!                             infos section, 3 with the maps and objects
//!                             sections too, 4 when the content is
//!                             compressed (and all eight sections are
//!                             there), 5 when it is a compressed value
//!                             that names its codec (what this build
//!                             writes instead of 4)
//!   5   1  mode             1 = updates
//!   6   2  reserved         0, 0
//!   8   8  checksum         xxh3-64 of the body, little-endian
//! body: five sections, each a varint byte length then its bytes
//!   peers     varint n, then n x u64 LE peer ids (indexes below refer here)
//!   texts     varint n, then n x (varint length, UTF-8 name)
//!   changes   varint n, then per change:
//!               varint peer index
//!               varint counter + 1, or 0 when it continues this update's
//!                      previous change of the same peer
//!               varint number of ops (>= 1)
//!               varint (explicit deps << 1) | 1 if it depends on its
//!                      peer's previous op (counter - 1)
//!               explicit deps: varint peer index, varint counter
//!   ops       op runs covering each change's ops in order, per run:
//!               u8 kind: bits 0-1  0 insert, 1 insert continuing the
//!                                  previous run, 2 delete, 3 delete
//!                                  backwards (op i targets counter - i)
//!                        bit 2     insert without content; with
//!                                  kind 2 a mark's start anchor, with
//!                                  kind 3 its end anchor (length 1)
//!                        bit 3     a text index follows (else: as before,
//!                                  starting at 0)
//!                        bits 4-7  the run length if 1..=15, else 0 and
//!                                  the length follows as a varint
//!               [varint length]
//!               [varint text index]
//!               insert (unless continuing): left origin relative to R,
//!                      right origin relative to the left origin (or to
//!                      the run's own first id when there is none)
//!               delete: first target relative to R
//!               mark start: the char the anchor is glued to, written
//!                      as a left and a right origin (as for an insert)
//!                      of which only one is set: left when the anchor
//!                      sticks to the char before it (the rule expands
//!                      before), right otherwise (none: the start or end
//!                      of the text); u8 expand rule (0 after, 1 before,
//!                      2 both, 3 none), varint length + UTF-8 key, the
//!                      value (see `value.rs`)
//!               mark end: the glued char likewise (left when the rule
//!                      does not expand after), then the id of its mark's
//!                      start op relative to the op's own id
//!             R is the id the previous run left the cursor at: the last
//!             op of the previous insert run, the last target of the
//!             previous delete run, the previous mark op itself; the run's
//!             own first id at the start.
//!             An id relative to a base is one varint v: 0 = none (start or
//!             end of the text); odd = same peer as the base, counter =
//!             base counter - unzigzag(v >> 1); even = peer index
//!             (v >> 1) - 1, then a varint counter.
//!   content   the UTF-8 text of the inserts with content, in order;
//!             in version 4 as a compressed value: varint length of the
//!             text, then one LZ4 block; in version 5 the same after a
//!             codec byte (`packed.rs`; the writer compresses only when
//!             that is smaller than the text; B4's whole history:
//!             182,315 bytes of text in 84,987, plus the codec byte)
//!   commits   (version 2 and up) the messages and timestamps of the
//!             commits the ops belong to (layout in `commits.rs`)
//!   maps      (version 3 and up) varint n, then n x (varint length, UTF-8 name):
//!             the maps that map ops name by index
//!   objects   (version 3 and up) the distinct objects: varint count, then each
//!             as a value (an embed) or tag 8 and a map's body (a block
//!             marker's attributes; see `value.rs`); then varint n, and
//!             n x (varint peer index, varint counter, varint object
//!             index): the inserts (of one U+FFFC char) that are embeds
//!             or block markers
//! ```
//!
//! Version 3 (written only when the document has map ops, embeds or block
//! markers) also escapes new op kinds in the ops stream: a mark start kind
//! byte with no packed length, an explicit length of 0, then a u8
//! sub-kind (0: a map op, see `updates.rs`).
//!
//! All integers are varints (LEB128) or fixed-width little-endian. Lamport
//! timestamps are not stored: they follow from the dependencies.
//!
//! An insert may leave out its text (no content) when a delete in the same
//! update removes it; the receiver stores those chars as tombstones.
//! Because of that an update is applied all at once or kept pending as a
//! whole. Weft's exporter no longer does this (every replica keeps the
//! text of every version, for `Doc::fork_at` and `Doc::diff`), but reads
//! such updates from older writers and other encoders.
//!
//! # The snapshot format (mode 2, format versions 1 to 6)
//!
//! The whole history plus the current state of every text, so a new peer
//! can open the document without replaying ops.
//!
//! ```text
//! header (16 bytes): as above, mode 2; the checksum (xxh3-64 of the body)
//!                    is the document-level checksum
//! body: a weft-kv table (see the weft-kv crate), entries in key order:
//!   "a" + u32 BE i   (version 5, every text with anchors) the styles of
//!                    text i for reads before its tree: per mark that
//!                    styles visible chars, its char range, key and value,
//!                    in the order marks win (layout in `snapshot_styles.rs`)
//!   "c"              the change table (layout in `history.rs`): per change
//!                    its peer, counters, length and deps
//!   "d"              (when some char is deleted and the document has the
//!                    text of every deleted char) the text of the deleted
//!                    chars in seq order, anchors aside (LZ4 when smaller;
//!                    version 4: raw deflate when smaller, in every mode):
//!                    a loaded document can show every version; older
//!                    snapshots without it still read (their deleted chars
//!                    have no text)
//!   "h" + u32 BE s   history block: op runs from seq s on, about 4 KiB of
//!                    them (layout in `history.rs`); version 4: about 64
//!                    KiB of them as four deflated columns, the origins
//!                    of inserts predicted from the segments' document
//!                    order (layout in `columns.rs`); blocks follow each
//!                    other without gaps from seq 0
//!   "i"              (version 2 always, 4 when there are some) the commit infos
//!                    (layout in `commits.rs`), as for the history
//!   "m"              meta: varint op count; varint n + n x u64 LE peer
//!                    ids (sorted); varint n texts x (name, varint chars,
//!                    UTF-8 bytes, UTF-16 units, anchors); varint n x (peer
//!                    index, counter end) = the version; varint n x (peer
//!                    index, counter) = the frontiers
//!   "p"              (only when the document holds pending updates) the
//!                    pending updates: varint n, then n x (varint length,
//!                    the update as received, header included), sorted
//!                    by their bytes, without duplicates; each still
//!                    waits at the snapshot's version
//!   "s" + u32 BE i   segments of text i: its items in document order as
//!                    maximal runs of consecutive seqs, all visible or all
//!                    deleted (tombstones and style anchors): varint n;
//!                    n x varint (length << 1 | deleted); n x varint start,
//!                    written as zigzag(start - e) << 2 | k where e is the
//!                    end of the k-th latest segment (k < 4; the encoder
//!                    takes the smallest value)
//!   "t" + u32 BE i   the visible text of text i in document order (UTF-8)
//! every value but the meta: a 0 byte then the bytes as they are (history,
//! changes, segments), or a codec byte (1 LZ4, 2 deflate), the varint
//! length and the compressed bytes (the texts, when that is smaller);
//! before version 6 no codec byte: the reader knew it from the key
//! ```
//!
//! Version 6 (what this build writes) makes every compressed value name
//! its codec (`packed.rs`), so that a writer may pick one per value and
//! a reader never infers it from the mode, the version and the key.
//! Version 5 adds "a", so that reading a marked text after a lazy import needs
//! neither its tree nor the history (B4 with marks: first read 44x the
//! unmarked one's before, 1.3x after; snapshot +106 bytes).
//!
//! Version 4 changes the history
//! blocks and the codec of "d" only, and no longer ties the version to
//! what the document holds: "i", "n" and "o" are there when needed.
//! Texts are written by the denser LZ4 compressor of `lz4hc.rs` (any
//! version's reader reads them). B4's snapshot in version 1: 166,934
//! bytes (history 48,357, deleted text 41,963, segments 31,694, text
//! 44,397); in version 4: 118,461 (25,913, 26,428, 31,694, 34,195).
//!
//! Limits on decoding: a compressed value's declared length is at most
//! 16 times its compressed bytes plus 64 for LZ4, 8 times for deflate (a
//! shallow snapshot's values, version 4's history columns and deleted
//! text), and 2 times for segments whatever the codec (each
//! segment becomes about 30 bytes of tree); larger is malformed. Writers
//! store a value raw rather than compress it further (real text
//! compresses 2-4x), so what a hostile snapshot makes a reader decompress
//! stays a small multiple of its size, not the 255x (1,032x) the codecs
//! allow. An LZ4 block that claims more than 8 times its size has its
//! tokens walked to check that it produces exactly that length before
//! anything is allocated, and deflate output grows only as it decodes. A
//! count of items reserves room for at most 1,024 of them ahead
//! (`bytes::bounded_capacity`). So a failed import allocates at most a
//! small multiple of its input (`tests/import_memory.rs` and the `import`
//! fuzz target check 64 times plus 4 MiB).
//!
//! # The shallow snapshot format (mode 3, format versions 1 to 6)
//!
//! A snapshot (as above) without the history of a root version: the
//! snapshot numbers the root's ops first (seqs below R), and
//!
//! ```text
//!   "h" + u32 BE s   history blocks from seq R on (none when R = op count)
//!   "d"              the text of the deleted chars from seq R on, and of
//!                    the root's chars listed in "e"
//!   "e"              (when there are some) the root's chars that were
//!                    visible at the root and are deleted now: varint n,
//!                    n x (varint start - previous end, varint length);
//!                    a version after the root shows them
//!   "k"              the marks whose start op is in the root (layout in
//!                    `history.rs`: text, start, glue, rule, key, value,
//!                    end if in the root, its glue): their anchors stay
//!   "r"              varint R (1 <= R <= op count); only in mode 3
//!   "s" + u32 BE i   segments as above; none spans seq R
//! compressed "d" and "s" values are raw deflate streams; texts ("t")
//! are LZ4 as in a full snapshot (written by a denser compressor)
//! ```
//!
//! The change table stays whole, so the root's op ids still map to seqs
//! (new ops name root chars as origins and delete targets). A loader
//! stands in for the root's op runs with what the segments and "k" say
//! (see `oplog/trimmed.rs` for why nothing needs more).
//!
//! Seqs number the ops in history order (the order the blocks list them,
//! which a loading document keeps). The text of the inserts is stored once,
//! in the texts: the history's visible chars take theirs from the text of
//! the visible segments ordered by seq, its deleted chars from "d". The change table maps a version to
//! seq ranges, so the blocks holding a range of versions can be read alone.
//!
//! Import checks the header and the document checksum once, then reads the
//! table with `import_all_unchecked` (the checksum covered it) and the meta;
//! the texts, the history and the trees are decoded when first needed.
//! A body forged with a recomputed checksum is taken as stored: the loader
//! checks every reference (an error then comes from the operation that
//! loads, and changes nothing) but not that the stored order of chars is
//! the one the history produces, which only a replay could tell.
//!
//! # Small messages
//!
//! A [`crate::Cursor`], a [`VersionVector`], [`crate::Frontiers`] and
//! presence state travel in a small frame of their own: a magic byte per
//! kind (0xC5 version vector, 0xC6 frontiers, 0xC7 cursor, 0xC8 presence),
//! a format version byte, the body, and the low 32 bits of the xxh3-64 of
//! all that, little-endian (`bytes::open_framed`). The version layouts are
//! in `versions.rs`.
//!
//! Decoding never panics and never allocates more than the input justifies:
//! every count is checked against the bytes left, every index and id is
//! checked before use, and a failed import leaves the document unchanged.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod columns;
mod commit_infos;
mod load;
mod lz4hc;
mod packed;
mod root;
#[cfg(test)]
mod sizes;
mod snapshot;
mod snapshot_history;
mod snapshot_maps;
mod snapshot_styles;
mod updates;
pub(crate) mod value_bytes;
mod version_bytes;

pub(crate) use load::{Head, Loaded};
pub(crate) use snapshot::{Meta, Snapshot};

use std::ops::Range;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::id::Seq;
use crate::merge::Update;
use crate::oplog::OpLog;
use crate::text::TextTable;
use crate::version::VersionVector;

const MAGIC: [u8; 4] = *b"weft";
/// The newest update format version this build writes and reads: 2 adds the
/// commit infos (messages and timestamps), 3 map ops, 4 (updates only)
/// compressed content, 5 compressed content that names its codec.
/// Exports without any are written as version 1, byte for byte as
/// before, and without map ops as version 2 at most.
/// (Shallow snapshots are a mode, not a version: an older reader names
/// it unsupported.)
const FORMAT_VERSION: u8 = 5;
/// The newest snapshot format version, which this build writes: 5 adds
/// each marked text's styles ("a"), 6 compressed values that name their
/// codec (docs/FORMAT.md 3.1).
const SNAPSHOT_VERSION: u8 = 6;
/// The snapshot version of a shallow snapshot that holds cancels (cancel
/// runs from its root on, or marks cancelled at its root: docs/FORMAT.md
/// 5.5), which a version 6 reader would refuse or misread; every other
/// snapshot is still written as [`SNAPSHOT_VERSION`].
const SHALLOW_CANCELS_VERSION: u8 = 7;
const MODE_UPDATES: u8 = 1;
const MODE_SNAPSHOT: u8 = 2;
const MODE_SHALLOW: u8 = 3;
const HEADER_LEN: usize = 16;

/// `body` behind a header of `mode`.
fn with_header(mode: u8, version: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&MAGIC);
    out.push(version);
    out.push(mode);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&xxh3_64(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Encodes the ops of `log` that `from` lacks (and `upto`, a causally
/// closed version, includes, if given) as an update.
pub(crate) fn encode_updates(
    log: &OpLog,
    texts: &TextTable,
    from: &VersionVector,
    upto: Option<&VersionVector>,
) -> Vec<u8> {
    encode_pieces(log, texts, &log.missing_pieces(from, upto))
}

/// Encodes the ops `pieces` of `log` (see [`OpLog::missing_pieces`]) as an
/// update.
pub(crate) fn encode_pieces(
    log: &OpLog,
    texts: &TextTable,
    pieces: &[(usize, Range<Seq>)],
) -> Vec<u8> {
    let infos = log.commit_infos_for(pieces);
    let (body, version) = updates::encode_body(log, texts, pieces, &infos);
    with_header(MODE_UPDATES, version, &body)
}

/// Encodes the whole history, every text's state and the pending
/// updates (as received, header included) as a snapshot: a shallow one
/// when the log is a shallow document's (see [`encode_shallow`]).
pub(crate) fn encode_snapshot(log: &OpLog, texts: &TextTable, pending: &[&[u8]]) -> Vec<u8> {
    encode_shallow(log, texts, pending, log.trimmed_end())
}

/// As [`encode_snapshot`], leaving out the history of the ops below seq
/// `trimmed` (which must be exactly the ops of a version, at least the
/// log's own trimmed root): a shallow snapshot (mode 3), or a full one
/// when `trimmed` is 0.
pub(crate) fn encode_shallow(
    log: &OpLog,
    texts: &TextTable,
    pending: &[&[u8]],
    trimmed: Seq,
) -> Vec<u8> {
    let version = if snapshot::shallow_cancels(log, trimmed) {
        SHALLOW_CANCELS_VERSION
    } else {
        SNAPSHOT_VERSION
    };
    let mode = if trimmed > 0 {
        MODE_SHALLOW
    } else {
        MODE_SNAPSHOT
    };
    with_header(
        mode,
        version,
        &snapshot::encode(log, texts, pending, trimmed),
    )
}

/// A decoded export.
#[derive(Debug)]
pub(crate) enum Decoded {
    Update(Update),
    Snapshot(Snapshot),
}

/// Checks that `bytes` start with `MAGIC`, before anything else, so that
/// a few bytes of something else are named as such rather than as a cut
/// short export: [`Error::EmptyInput`] for no bytes, [`Error::BadMagic`]
/// when they differ from the magic, [`Error::UnexpectedEof`] when they
/// are a strict prefix of it.
fn check_magic(bytes: &[u8]) -> Result<()> {
    if bytes.is_empty() {
        return Err(Error::EmptyInput);
    }
    let n = bytes.len().min(MAGIC.len());
    if bytes.get(..n) != MAGIC.get(..n) {
        return Err(Error::BadMagic);
    }
    if n < MAGIC.len() {
        return Err(Error::UnexpectedEof);
    }
    Ok(())
}

/// Checks the header and checksum of `bytes` and decodes the update, or
/// the table and meta of the snapshot.
///
/// # Errors
///
/// [`Error::EmptyInput`], [`Error::UnexpectedEof`], [`Error::BadMagic`],
/// [`Error::UnsupportedVersion`], [`Error::UnsupportedMode`],
/// [`Error::ChecksumMismatch`], [`Error::Malformed`],
/// [`Error::Inconsistent`] or [`Error::Storage`].
pub(crate) fn decode(bytes: &[u8]) -> Result<Decoded> {
    check_magic(bytes)?;
    let header = bytes.get(..HEADER_LEN).ok_or(Error::UnexpectedEof)?;
    let rest = header.get(MAGIC.len()..).unwrap_or(&[]);
    let mut r = crate::bytes::Reader::new(rest, 0);
    let version = r.u8()?;
    if !(1..=FORMAT_VERSION.max(SHALLOW_CANCELS_VERSION)).contains(&version) {
        return Err(Error::UnsupportedVersion(version));
    }
    let mode = r.u8()?;
    if !(MODE_UPDATES..=MODE_SHALLOW).contains(&mode) {
        return Err(Error::UnsupportedMode(mode));
    }
    // Reserved for a later format: bytes this build cannot read.
    if r.take(2)? != [0, 0] {
        return Err(Error::UnsupportedVersion(version));
    }
    let expected = r.u64_le()?;
    let body = bytes.get(HEADER_LEN..).unwrap_or(&[]);
    let actual = xxh3_64(body);
    if actual != expected {
        return Err(Error::ChecksumMismatch { expected, actual });
    }
    let newest = match mode {
        MODE_UPDATES => FORMAT_VERSION,
        MODE_SNAPSHOT => SNAPSHOT_VERSION,
        _ => SHALLOW_CANCELS_VERSION,
    };
    if version > newest {
        return Err(Error::UnsupportedVersion(version));
    }
    if mode != MODE_UPDATES {
        Snapshot::decode(body, version, mode == MODE_SHALLOW).map(Decoded::Snapshot)
    } else {
        updates::decode_body(body, version).map(Decoded::Update)
    }
}
