//! Writing snapshots, and reading their table, meta and pending updates
//! (see the module doc of [`super`] for the layout).
//!
//! Import reads only the header, the table's structure and the meta
//! entry ([`Snapshot::decode`]); a text's document-order text is
//! decompressed when first read ([`Snapshot::stored_text`]); the history
//! and each text's items are decoded when the document needs them (see
//! `load.rs`; the document decides when, in `doc::lazy`).

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use weft_kv::{MemKvStore, TableWriter};

use crate::error::{Error, Result};
use crate::id::{OpId, PeerId, Seq, NO_SEQ};
use crate::merge::Parked;
use crate::oplog::{CommitInfo, OpLog};
use crate::text::{Counts, Segment, StoredStyles, TextState, TextTable};
use crate::unit::prefix_units;
use crate::version::{Frontiers, VersionVector};

use super::columns::{ColumnWriter, Neighbours};
use super::packed::{
    framed, pack, pack_at_most, stored, unpack, unpack_with, Codec, Framing, MAX_RATIO,
    MAX_RATIO_SEGMENTS,
};
use super::root::{cancelled_root_marks, deleted_later, encode_ranges, encode_starts};
use super::snapshot_history;
use super::snapshot_styles;
use crate::bytes::{
    bounded_capacity, peer_at, unzigzag, write_bytes, write_varint, zigzag, Reader,
};

pub(super) const KEY_CHANGES: &[u8] = b"c";
/// Shallow snapshots (version 7): the root's marks cancelled at the root.
pub(super) const KEY_ROOT_CANCELLED: &[u8] = b"C";
/// A shallow snapshot's root map ops (see `maps.rs`).
pub(super) const KEY_ROOT_MAP_SETS: &[u8] = b"K";
pub(super) const KEY_DELETED: &[u8] = b"d";
/// Shallow snapshots: the root's chars that ops after it deleted.
pub(super) const KEY_DELETED_LATER: &[u8] = b"e";
pub(super) const KEY_HISTORY: u8 = b'h';
const KEY_COMMITS: &[u8] = b"i";
/// Shallow snapshots: the marks started in the trimmed root.
pub(super) const KEY_ROOT_MARKS: &[u8] = b"k";
const KEY_META: &[u8] = b"m";
const KEY_PENDING: &[u8] = b"p";
/// Shallow snapshots: the number of trimmed ops.
const KEY_ROOT: &[u8] = b"r";
pub(super) const KEY_SEGMENTS: u8 = b's';
pub(super) const KEY_TEXT: u8 = b't';

/// A key: one tag byte and a big-endian u32 (so keys sort by the number).
pub(super) fn key(tag: u8, n: u32) -> [u8; 5] {
    [
        tag,
        (n >> 24) as u8,
        (n >> 16) as u8,
        (n >> 8) as u8,
        n as u8,
    ]
}

/// What a snapshot says about one text.
#[derive(Debug, Clone)]
pub(crate) struct TextMeta {
    pub name: Box<str>,
    /// Visible chars, UTF-8 bytes, UTF-16 units and anchors.
    pub counts: Counts,
}

/// The meta entry: what import needs before anything else is decoded.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    /// Number of ops in the history.
    pub ops: u32,
    /// Peer ids the change table indexes into.
    pub peers: Vec<PeerId>,
    pub texts: Vec<TextMeta>,
    pub version: VersionVector,
    pub frontiers: Frontiers,
}

/// A snapshot whose header, checksum, table structure and meta entry
/// were checked.
pub(crate) struct Snapshot {
    pub(super) store: MemKvStore,
    pub meta: Meta,
    /// The updates that were pending in the document, decoded (with the
    /// bytes they arrived as).
    pub pending: Vec<Parked>,
    /// Messages and timestamps of commits (format version 2).
    pub commits: Vec<CommitInfo>,
    /// The names of the maps its map ops write (format version 3).
    pub map_names: Vec<Box<str>>,
    /// A shallow snapshot's number of trimmed ops (its root's ops are
    /// the seqs below it); 0 for a full one.
    pub trimmed: Seq,
    /// The codec its compressed values (texts, deleted text) had before
    /// version 6, whose values name theirs (see [`Framing`]): LZ4 in a
    /// full snapshot, deflate in a shallow one.
    codec: Codec,
    /// Its format version (4: columnar history blocks, deflated deleted
    /// text; 5: styles; 6: values name their codec).
    pub(super) version: u8,
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// Encodes `log` and the state of every text as a snapshot body; a
/// shallow one (deflate, see [`Codec`]) when `trimmed` is not 0: the
/// history from seq `trimmed` on, plus the marks started before it (the
/// log's ops below `trimmed` must be exactly a version's).
/// Whether a shallow snapshot rooted at seq `trimmed` of `log` holds
/// cancels (a cancel run from the root on, or a root mark cancelled at
/// the root): what only version 7 may hold.
pub(crate) fn shallow_cancels(log: &OpLog, trimmed: Seq) -> bool {
    trimmed > 0
        && (log
            .runs_in(trimmed..log.next_seq())
            .any(|(r, _)| matches!(r.kind, crate::oplog::OpKind::Cancel { .. }))
            || !cancelled_root_marks(log, trimmed).is_empty())
}

pub(crate) fn encode(log: &OpLog, texts: &TextTable, pending: &[&[u8]], trimmed: Seq) -> Vec<u8> {
    let codec = if trimmed > 0 {
        Codec::Deflate
    } else {
        Codec::Lz4
    };
    let mut w = TableWriter::new();
    let add = |w: &mut TableWriter, k: &[u8], v: &[u8]| {
        // Keys are written in order, so the writer never refuses one.
        let added = w.add(k, v);
        debug_assert!(added.is_ok(), "snapshot keys are written in order");
    };

    // History: the change table, then the op runs in blocks of about
    // BLOCK_BYTES, keyed by their first seq.
    let version = log.version();
    let mut peers: Vec<PeerId> = version.iter().map(|(p, _)| p).collect();
    peers.sort_unstable();
    let peer_index = |p: PeerId| peers.binary_search(&p).unwrap_or(0) as u64;
    if trimmed > 0 {
        let cancelled = cancelled_root_marks(log, trimmed);
        if !cancelled.is_empty() {
            add(
                &mut w,
                KEY_ROOT_CANCELLED,
                &stored(&encode_starts(&cancelled)),
            );
        }
        if let Some(value) = super::snapshot_maps::write_root_sets(log, trimmed) {
            add(&mut w, KEY_ROOT_MAP_SETS, &stored(&value));
        }
    }
    // Version 5: each marked text's styles, for reads before its tree.
    for (i, state) in texts.iter().enumerate() {
        if let Some(value) = snapshot_styles::write_styles(log, state) {
            add(
                &mut w,
                &key(snapshot_styles::KEY_STYLES, i as u32),
                &pack(&value, codec),
            );
        }
    }
    add(
        &mut w,
        KEY_CHANGES,
        &stored(&snapshot_history::encode_changes(log, peer_index)),
    );
    // The deleted text, so that a document opened from the snapshot can
    // show, fork and diff every version.
    if let Some(deleted) = deleted_text(log, texts, trimmed) {
        // Deflate in every mode: read only with the history, where its
        // cost is small (B4: 77,463 bytes in 26,425; LZ4: 41,960).
        add(
            &mut w,
            KEY_DELETED,
            &pack(deleted.as_bytes(), Codec::Deflate),
        );
    }
    let later = deleted_later(log, trimmed);
    if !later.is_empty() {
        add(&mut w, KEY_DELETED_LATER, &stored(&encode_ranges(&later)));
    }
    // State first: per text, its segments and its visible text in
    // document order; the history's origins are written against the
    // segments' order.
    let mut metas = Vec::with_capacity(texts.len());
    let mut states = Vec::with_capacity(texts.len());
    let mut all_segments = Vec::with_capacity(texts.len());
    for state in texts.iter() {
        let (meta, segments, value, text) = encode_state(log, state, trimmed, codec);
        metas.push(meta);
        states.push((value, text));
        all_segments.push(segments);
    }
    let mut neighbours = Neighbours::from_texts(all_segments.iter().map(Vec::as_slice));
    drop(all_segments);
    let mut block = ColumnWriter::new();
    let mut block_start = trimmed;
    for run in snapshot_history::CanonicalRuns::from_seq(log, trimmed) {
        block.push(log, &run, &mut neighbours);
        if block.is_full() {
            add(
                &mut w,
                &key(KEY_HISTORY, block_start),
                &stored(&block.finish()),
            );
            block_start = run.end();
        }
    }
    if !block.is_empty() {
        add(
            &mut w,
            &key(KEY_HISTORY, block_start),
            &stored(&block.finish()),
        );
    }

    if log.has_commit_infos() {
        let mut value = Vec::new();
        super::commit_infos::write_infos(&mut value, log.commit_infos());
        add(&mut w, KEY_COMMITS, &stored(&value));
    }
    if trimmed > 0 {
        add(
            &mut w,
            KEY_ROOT_MARKS,
            &stored(&snapshot_history::write_root_marks(log, trimmed)),
        );
    }
    add(&mut w, KEY_META, &encode_meta(log, &peers, &metas));
    super::snapshot_maps::write_entries(log, |k, v| add(&mut w, k, &stored(&v)));
    if !pending.is_empty() {
        // Sorted and deduplicated: the same pending set gives the same
        // bytes whatever order it arrived in.
        let mut sorted = pending.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut value = Vec::new();
        write_varint(&mut value, sorted.len() as u64);
        for bytes in sorted {
            write_bytes(&mut value, bytes);
        }
        add(&mut w, KEY_PENDING, &stored(&value));
    }
    if trimmed > 0 {
        let mut value = Vec::new();
        write_varint(&mut value, u64::from(trimmed));
        add(&mut w, KEY_ROOT, &value);
    }
    for (i, (segments, _)) in states.iter().enumerate() {
        add(&mut w, &key(KEY_SEGMENTS, i as u32), segments);
    }
    for (i, (_, text)) in states.iter().enumerate() {
        add(&mut w, &key(KEY_TEXT, i as u32), text);
    }
    w.finish()
}

/// The text of every deleted char (anchors aside) of every text, in seq
/// order (the order a loader meets their inserts in), taken from the
/// history's inserts; `None` when there is none, or when the document
/// lacks the text of some (an update from an older writer left it out),
/// which a loader then takes as no deleted text at all. Only chars from
/// seq `from` on, and those before it that ops from `from` on deleted
/// (a shallow snapshot has no text for the rest of the root's).
fn deleted_text(log: &OpLog, texts: &TextTable, from: Seq) -> Option<String> {
    let mut ranges: Vec<Range<Seq>> = texts.iter().flat_map(|t| t.deleted_chars(from)).collect();
    // The root's chars deleted after it: a version after the root shows
    // them.
    ranges.extend(deleted_later(log, from));
    ranges.sort_unstable_by_key(|r| r.start);
    let mut out = String::new();
    // One pass beside the op runs: within a run, a char cursor (chars
    // and bytes from its start) that only moves forward.
    let ops = log.ops();
    let mut ri = 0usize;
    let (mut at_char, mut at_byte) = (0u32, 0usize);
    let mut cur: Option<usize> = None;
    for r in ranges {
        let mut s = r.start;
        while s < r.end {
            while ops.get(ri).is_some_and(|run| run.end() <= s) {
                ri += 1;
            }
            let run = ops.get(ri).filter(|run| run.seq <= s)?;
            let text = run.content(log.content())?.as_bytes();
            if cur != Some(ri) {
                (cur, at_char, at_byte) = (Some(ri), 0, 0);
            }
            let upto = run.end().min(r.end);
            let ascii = text.len() == run.len as usize;
            let advance = |at_char: &mut u32, at_byte: &mut usize, to: u32| {
                if ascii {
                    *at_byte = to as usize;
                } else {
                    let (b, _) = prefix_units(text.get(*at_byte..).unwrap_or(&[]), to - *at_char);
                    *at_byte += b as usize;
                }
                *at_char = to;
            };
            advance(&mut at_char, &mut at_byte, s - run.seq);
            let from = at_byte;
            advance(&mut at_char, &mut at_byte, upto - run.seq);
            out.push_str(std::str::from_utf8(text.get(from..at_byte)?).ok()?);
            s = upto;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// One text's meta (name, counts), segments value and text value. No
/// segment spans seq `split` (where a shallow snapshot's history starts).
fn encode_state(
    log: &OpLog,
    state: &TextState,
    split: Seq,
    codec: Codec,
) -> (TextMeta, Vec<Segment>, Vec<u8>, Vec<u8>) {
    let (segments, text, counts) = state.segments(log.content(), split);
    let meta = TextMeta {
        name: state.name().into(),
        counts,
    };
    let seg_bytes = encode_segments(&segments);
    // The text is LZ4 written by the slower, denser compressor of
    // `lz4hc.rs` (B4: 44.4 to 34.2 KB), read as fast as any LZ4. A full
    // snapshot stores its segments as they are (LZ4 does not shrink
    // varints; the first edit reads them). A shallow one is about size:
    // deflate takes a fifth off the segments (B4: 31.7 to 24.7 KB).
    let text = framed(
        text.as_bytes(),
        Codec::Lz4,
        super::lz4hc::compress(text.as_bytes()),
        MAX_RATIO,
    );
    let value = match codec {
        Codec::Lz4 => stored(&seg_bytes),
        Codec::Deflate => pack_at_most(&seg_bytes, codec, MAX_RATIO_SEGMENTS),
    };
    (meta, segments, value, text)
}

/// A text's segments value (before [`stored`]): their count, then each
/// one's length and deletedness, then each one's start (see
/// [`RecentEnds`]).
fn encode_segments(segments: &[Segment]) -> Vec<u8> {
    let mut out = Vec::with_capacity(segments.len() * 4 + 8);
    write_varint(&mut out, segments.len() as u64);
    for s in segments {
        write_varint(&mut out, (u64::from(s.len) << 1) | u64::from(s.deleted));
    }
    let mut ends = RecentEnds::default();
    for s in segments {
        write_varint(&mut out, ends.encode(s.seq));
        ends.push(s.seq + s.len);
    }
    out
}

/// The meta value: op count, peers (sorted), texts, version, frontiers.
fn encode_meta(log: &OpLog, peers: &[PeerId], metas: &[TextMeta]) -> Vec<u8> {
    let peer_index = |p: PeerId| peers.binary_search(&p).unwrap_or(0) as u64;
    let version = log.version();
    let frontiers = log.frontiers();
    let mut meta = Vec::new();
    write_varint(&mut meta, u64::from(log.next_seq()));
    write_varint(&mut meta, peers.len() as u64);
    for p in peers {
        meta.extend_from_slice(&p.to_le_bytes());
    }
    write_varint(&mut meta, metas.len() as u64);
    for m in metas {
        write_bytes(&mut meta, m.name.as_bytes());
        for n in [
            m.counts.chars,
            m.counts.utf8,
            m.counts.utf16,
            m.counts.anchors,
        ] {
            write_varint(&mut meta, u64::from(n));
        }
    }
    // The version: `peers` holds exactly its peers, in order.
    write_varint(&mut meta, peers.len() as u64);
    for (i, &p) in peers.iter().enumerate() {
        write_varint(&mut meta, i as u64);
        write_varint(&mut meta, u64::from(version.get(p)));
    }
    write_varint(&mut meta, frontiers.len() as u64);
    for id in frontiers.iter() {
        write_varint(&mut meta, peer_index(id.peer));
        write_varint(&mut meta, u64::from(id.counter));
    }
    meta
}

impl Snapshot {
    /// Whether it holds embeds (they are read from its history: a
    /// document opened from it loads at once).
    pub fn has_embeds(&self) -> bool {
        self.store.get(super::snapshot_maps::KEY_EMBEDS).is_some()
    }

    /// Reads the table of a snapshot body (whose checksum the caller
    /// verified) and its meta entry; `shallow` for mode 3 (a shallow
    /// snapshot).
    pub fn decode(body: &[u8], version: u8, shallow: bool) -> Result<Snapshot> {
        let mut store = MemKvStore::new();
        store.import_all_unchecked(body).map_err(Error::Storage)?;
        let meta = decode_meta(store.get(KEY_META).ok_or(Error::Inconsistent {
            what: "snapshot meta entry",
        })?)?;
        let bad_root = Error::Inconsistent {
            what: "shallow root",
        };
        let trimmed = match (store.get(KEY_ROOT), shallow) {
            (Some(value), true) => {
                let mut r = Reader::new(value, 0);
                let n = r.u32("shallow root")?;
                if !r.is_empty() || n == 0 || n > meta.ops || store.get(KEY_ROOT_MARKS).is_none() {
                    return Err(bad_root);
                }
                n
            }
            (None, false)
                if store.get(KEY_ROOT_MARKS).is_none()
                    && store.get(KEY_DELETED_LATER).is_none()
                    && store.get(KEY_ROOT_CANCELLED).is_none()
                    && store.get(KEY_ROOT_MAP_SETS).is_none() =>
            {
                0
            }
            _ => return Err(bad_root),
        };
        let codec = if shallow { Codec::Deflate } else { Codec::Lz4 };
        let mut styled = false;
        for (i, text) in (0..).zip(&meta.texts) {
            if store.get(&key(KEY_SEGMENTS, i)).is_none() || store.get(&key(KEY_TEXT, i)).is_none()
            {
                return Err(Error::Inconsistent {
                    what: "snapshot text entry",
                });
            }
            // Version 5 stores the styles of exactly the texts with
            // marks, and is written only when there are some.
            let styles = store.get(&key(snapshot_styles::KEY_STYLES, i)).is_some();
            let marked = text.counts.anchors > 0;
            if (styles && (version < 5 || !marked)) || (version >= 5 && marked && !styles) {
                return Err(Error::Inconsistent {
                    what: "snapshot styles entry",
                });
            }
            styled |= styles;
        }
        if version == 5 && !styled {
            return Err(Error::Inconsistent {
                what: "version 5 snapshot without styles",
            });
        }
        let pending = match store.get(KEY_PENDING) {
            Some(value) => decode_pending(&unpack(
                value,
                "pending updates",
                Framing::snapshot(version, Codec::Lz4),
            )?)?,
            None => Vec::new(),
        };
        let commits = match store.get(KEY_COMMITS) {
            Some(value) if version >= 2 => {
                let framing = Framing::snapshot(version, Codec::Lz4);
                let value = unpack(value, "commit infos", framing)?;
                super::commit_infos::read_infos(&mut Reader::new(&value, 0))?
            }
            Some(_) => {
                return Err(Error::Inconsistent {
                    what: "commit infos in a version 1 snapshot",
                })
            }
            None if version == 2 => {
                return Err(Error::Inconsistent {
                    what: "version 2 snapshot without commit infos",
                })
            }
            None => Vec::new(),
        };
        let map_names = super::snapshot_maps::read_entries(&store, version)?;
        Ok(Snapshot {
            store,
            meta,
            pending,
            commits,
            map_names,
            trimmed,
            codec,
            version,
        })
    }
}

/// Reads the pending updates of a snapshot: each a whole update as it
/// was received, checked like any import.
fn decode_pending(value: &[u8]) -> Result<Vec<Parked>> {
    let mut r = Reader::new(value, 0);
    let n = r.count("pending update count")?;
    let mut out = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        let at = r.offset();
        let bytes = r.bytes()?;
        match super::decode(bytes)? {
            super::Decoded::Update(update) => out.push(Parked {
                update,
                bytes: bytes.into(),
            }),
            super::Decoded::Snapshot(_) => {
                return Err(Error::Malformed {
                    offset: at,
                    what: "pending update",
                })
            }
        }
    }
    Ok(out)
}

fn decode_meta(bytes: &[u8]) -> Result<Meta> {
    let mut r = Reader::new(bytes, 0);
    let ops = r.u32("op count")?;
    if ops == NO_SEQ {
        return Err(Error::HistoryFull);
    }
    let n = r.count("peer count")?;
    let mut peers = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        let p = r.u64_le()?;
        if p == PeerId::MAX {
            return Err(Error::InvalidPeerId(p));
        }
        peers.push(p);
    }
    let n = r.count("text count")?;
    let mut texts: Vec<TextMeta> = Vec::with_capacity(bounded_capacity(n));
    let mut names = std::collections::HashSet::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        let name = std::str::from_utf8(r.bytes()?).map_err(|_| r.malformed("text name"))?;
        if !names.insert(name) {
            return Err(r.malformed("duplicate text name"));
        }
        let counts = Counts {
            chars: r.u32("char count")?,
            utf8: r.u32("byte count")?,
            utf16: r.u32("UTF-16 count")?,
            anchors: r.u32("anchor count")?,
        };
        texts.push(TextMeta {
            name: name.into(),
            counts,
        });
    }
    let peer = |r: &mut Reader<'_>| -> Result<PeerId> {
        let i = r.varint()?;
        peer_at(r, &peers, i)
    };
    let n = r.count("version length")?;
    let mut version = VersionVector::new();
    for _ in 0..n {
        let p = peer(&mut r)?;
        version.set(p, r.u32("counter")?);
    }
    let n = r.count("frontier count")?;
    let mut frontiers = Frontiers::new();
    for _ in 0..n {
        let p = peer(&mut r)?;
        frontiers.insert(OpId::new(p, r.u32("counter")?));
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing meta bytes"));
    }
    Ok(Meta {
        ops,
        peers,
        texts,
        version,
        frontiers,
    })
}

#[cfg(test)]
fn decode_segments(value: &[u8]) -> Result<Vec<Segment>> {
    segments_of(&unpack_with(
        value,
        "segments",
        Framing::Tagged,
        0,
        Some(MAX_RATIO_SEGMENTS),
    )?)
}

/// The segments of a decompressed segments value.
fn segments_of(raw: &[u8]) -> Result<Vec<Segment>> {
    let reader = SegmentReader::new(raw)?;
    let mut segments = Vec::with_capacity(reader.len());
    reader.for_each(|s| {
        segments.push(s);
        Ok(())
    })?;
    Ok(segments)
}

/// Reads a text's segments value (see [`decode_segments`]) one segment at
/// a time: its lengths and its starts are two sections read side by
/// side, so a text's items can be built without a list of its segments
/// in between.
pub(super) struct SegmentReader<'a> {
    /// The length varints.
    lens: &'a [u8],
    /// The start varints, then nothing.
    starts: &'a [u8],
    /// Offset of `lens` in the value (for errors).
    lens_at: usize,
    /// Number of segments.
    n: usize,
}

impl<'a> SegmentReader<'a> {
    /// A reader of the decompressed segments value `raw`.
    pub fn new(raw: &'a [u8]) -> Result<SegmentReader<'a>> {
        let mut r = Reader::new(raw, 0);
        // Every segment takes at least two bytes.
        let n = r.count("segment count")?;
        let lens_at = r.offset();
        let rest = raw.get(lens_at..).unwrap_or(&[]);
        let split = nth_varint_end(rest, n).ok_or_else(|| r.malformed("segment lengths"))?;
        let (lens, starts) = rest.split_at(split);
        Ok(SegmentReader {
            lens,
            starts,
            lens_at,
            n,
        })
    }

    /// Number of segments.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Calls `f` with each segment in order, then checks that the value
    /// has no bytes left. Stops at the first error (of `f`'s, or a
    /// malformed segment).
    #[inline]
    pub fn for_each(self, mut f: impl FnMut(Segment) -> Result<()>) -> Result<()> {
        let malformed = |at: usize, what| Error::Malformed {
            offset: self.lens_at + at,
            what,
        };
        let starts_at = self.lens.len();
        let (mut lp, mut sp) = (0usize, 0usize);
        let mut ends = RecentEnds::default();
        for _ in 0..self.n {
            let v = varint_at(self.lens, &mut lp).ok_or_else(|| malformed(lp, "segment length"))?;
            let len = u32::try_from(v >> 1)
                .ok()
                .filter(|&l| l > 0)
                .ok_or_else(|| malformed(lp, "segment length"))?;
            let start = varint_at(self.starts, &mut sp)
                .ok_or_else(|| malformed(starts_at + sp, "segment start"))?;
            let seq = ends
                .decode(start)
                .ok_or_else(|| malformed(starts_at + sp, "segment start"))?;
            let end = seq.checked_add(len);
            ends.push(end.ok_or_else(|| malformed(starts_at + sp, "segment length"))?);
            f(Segment {
                seq,
                len,
                deleted: v & 1 == 1,
            })?;
        }
        if sp != self.starts.len() {
            return Err(malformed(starts_at + sp, "trailing segment bytes"));
        }
        Ok(())
    }
}

/// The varint at `*pos` of `bytes` (moving `*pos` past it), or `None` if
/// it is cut off or overlong. Varints of up to four bytes, nearly all of
/// a segments value's, are read from one little-endian word without a
/// branch on their length (which is unpredictable) and without a call.
#[inline(always)]
fn varint_at(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    const STOPS: u32 = 0x8080_8080;
    let word = bytes
        .get(*pos..*pos + 4)
        .and_then(|w| <[u8; 4]>::try_from(w).ok())
        .map(u32::from_le_bytes);
    if let Some(w) = word {
        let stops = !w & STOPS;
        if stops != 0 {
            let n = stops.trailing_zeros() / 8 + 1;
            let v = (w & 0x7F)
                | ((w >> 1) & 0x3F80)
                | ((w >> 2) & 0x1F_C000)
                | ((w >> 3) & 0x0FE0_0000);
            *pos += n as usize;
            return Some(u64::from(v & (u32::MAX >> (32 - 7 * n))));
        }
    }
    varint_long_at(bytes, pos)
}

/// [`varint_at`] past its four-byte case, or near the end of `bytes`.
#[cold]
#[inline(never)]
fn varint_long_at(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut r = Reader::new(bytes.get(*pos..)?, 0);
    let v = r.varint().ok()?;
    *pos = bytes.len() - r.remaining();
    Some(v)
}

/// Byte length of the first `n` varints of `bytes` (each ends at a byte
/// below 0x80), if it holds that many. Eight bytes at a time: finding
/// where a text's segment starts begin is a pass over all its lengths.
fn nth_varint_end(bytes: &[u8], n: usize) -> Option<usize> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut seen = 0usize;
    let mut at = 0usize;
    if n == 0 {
        return Some(0);
    }
    let mut words = bytes.chunks_exact(8);
    for word in words.by_ref() {
        let w = u64::from_le_bytes(word.try_into().ok()?);
        let ends = (!w & HIGH).count_ones() as usize;
        if seen + ends >= n {
            break;
        }
        seen += ends;
        at += 8;
    }
    for (i, &b) in bytes.get(at..)?.iter().enumerate() {
        if b < 0x80 {
            seen += 1;
            if seen == n {
                return Some(at + i + 1);
            }
        }
    }
    None
}

/// The ends of the last four segments, newest first: a segment usually
/// starts where one of them ended (text typed inside earlier text ends
/// and the earlier text resumes), so its start is written as (which
/// end, difference): `zigzag(start - end) << 2 | which`.
#[derive(Default)]
struct RecentEnds([Seq; 4]);

impl RecentEnds {
    fn encode(&self, start: Seq) -> u64 {
        let mut best = u64::MAX;
        for (k, &end) in self.0.iter().enumerate() {
            let v = (zigzag(i64::from(start) - i64::from(end)) << 2) | k as u64;
            best = best.min(v);
        }
        best
    }

    fn decode(&self, v: u64) -> Option<Seq> {
        let end = *self.0.get((v & 3) as usize)?;
        u32::try_from(i64::from(end) + unzigzag(v >> 2)).ok()
    }

    fn push(&mut self, end: Seq) {
        // Spelled out: `rotate_right` was a sixth of opening a snapshot.
        let [a, b, c, _] = self.0;
        self.0 = [end, a, b, c];
    }
}

impl Snapshot {
    /// Value `value` of this snapshot's table, decompressed as its mode
    /// and version say (`what` names it in errors).
    pub(super) fn unpack<'a>(&self, value: &'a [u8], what: &'static str) -> Result<Cow<'a, [u8]>> {
        unpack(value, what, self.framing(self.codec))
    }

    /// How this snapshot's values name their codec: by a tag (version 6
    /// on), or not, when the reader knows it was `implied`.
    pub(super) fn framing(&self, implied: Codec) -> Framing {
        Framing::snapshot(self.version, implied)
    }

    /// The codec its values had before version 6 (see [`Framing`]).
    pub(super) fn codec(&self) -> Codec {
        self.codec
    }

    /// The segments of snapshot text `i`.
    pub(super) fn segments(&self, i: u32) -> Result<Vec<Segment>> {
        let raw = self.unpack_segments(self.store.get(&key(KEY_SEGMENTS, i)).unwrap_or(&[]))?;
        segments_of(&raw)
    }

    /// A segments value, decompressed: it may expand at most
    /// [`MAX_RATIO_SEGMENTS`] times.
    pub(super) fn unpack_segments<'a>(&self, value: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        let framing = self.framing(self.codec);
        unpack_with(value, "segments", framing, 0, Some(MAX_RATIO_SEGMENTS))
    }

    /// The styles of snapshot text `i` (see `text::StoredStyles`), or
    /// `None` if the snapshot has none for it (version 4 and older, or a
    /// text without marks).
    pub fn stored_styles(&self, i: u32) -> Result<Option<StoredStyles>> {
        let value = match self.store.get(&key(snapshot_styles::KEY_STYLES, i)) {
            Some(value) if self.version >= 5 => value,
            _ => return Ok(None),
        };
        let chars = self
            .meta
            .texts
            .get(i as usize)
            .map_or(0, |m| m.counts.chars);
        snapshot_styles::read_styles(&self.unpack(value, "styles")?, chars).map(Some)
    }

    /// The visible text of snapshot text `i` in document order,
    /// decompressed (with capacity for `room` more bytes) and checked
    /// against the meta's length.
    pub fn stored_text(&self, i: u32, room: usize) -> Result<String> {
        let value = self.store.get(&key(KEY_TEXT, i)).unwrap_or(&[]);
        // LZ4 in every mode (see `encode_state`).
        let framing = self.framing(Codec::Lz4);
        let raw = match unpack_with(value, "snapshot text", framing, room, None)? {
            Cow::Owned(raw) => raw,
            Cow::Borrowed(raw) => {
                let mut owned = Vec::with_capacity(raw.len().saturating_add(room.min(raw.len())));
                owned.extend_from_slice(raw);
                owned
            }
        };
        let text = String::from_utf8(raw).map_err(|e| Error::Malformed {
            offset: e.utf8_error().valid_up_to(),
            what: "snapshot text UTF-8",
        })?;
        if self
            .meta
            .texts
            .get(i as usize)
            .map(|m| m.counts.utf8 as usize)
            != Some(text.len())
        {
            return Err(Error::Inconsistent {
                what: "snapshot text length",
            });
        }
        Ok(text)
    }
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "tests unwrap and index what must be there"
)]
mod tests {
    use super::*;

    /// Segments whose lengths and starts take one to five varint bytes.
    fn sample() -> Vec<Segment> {
        let mut segments = Vec::new();
        let mut seq = 0u32;
        for i in 0..300u32 {
            let len = [1, 63, 64, 200, 20_000, 3_000_000][i as usize % 6];
            segments.push(Segment {
                seq,
                len,
                deleted: i % 3 == 0,
            });
            seq += len + [0, 1, 5_000, 7_000_000][i as usize % 4];
        }
        segments.reverse();
        segments
    }

    #[test]
    fn segments_round_trip() {
        for n in [0, 1, 7, 8, 9, 300] {
            let segments = sample()[..n].to_vec();
            let value = stored(&encode_segments(&segments));
            assert_eq!(decode_segments(&value).unwrap(), segments);
        }
    }

    #[test]
    fn damaged_segments_are_errors() {
        let raw = encode_segments(&sample());
        let mut trailing = raw.clone();
        trailing.push(0);
        assert!(decode_segments(&stored(&trailing)).is_err());
        for cut in 0..raw.len() {
            assert!(
                decode_segments(&stored(&raw[..cut])).is_err(),
                "cut at {cut}"
            );
        }
        // A varint longer than ten bytes.
        let mut overlong = vec![1u8];
        overlong.extend([0xFF; 11]);
        overlong.push(0);
        assert!(decode_segments(&stored(&overlong)).is_err());
    }

    /// The run count and the byte length of the columns of the history
    /// block that starts at seq 0 of `snapshot` (an export).
    #[cfg(not(feature = "small-nodes"))]
    fn first_block_runs_and_bytes(snapshot: &[u8]) -> (u64, usize) {
        let decoded = super::super::decode(snapshot).unwrap();
        let super::super::Decoded::Snapshot(snap) = decoded else {
            unreachable!("a snapshot export decodes as a snapshot: {decoded:?}");
        };
        let value = snap.store.get(&key(KEY_HISTORY, 0)).unwrap();
        let block = snap.unpack(value, "history block").unwrap();
        let mut r = Reader::new(&block, 0);
        let runs = r.varint().unwrap();
        (runs, r.remaining())
    }

    /// Regression: a version 4 block bounded its run count by its
    /// compressed bytes, but one-char runs with predicted origins compress
    /// below a byte each, and such a snapshot failed to load ('invalid
    /// run count'). Typing each char at the start of the text makes every
    /// char its own run, with both origins predicted.
    #[test]
    #[cfg(not(feature = "small-nodes"))]
    fn a_block_with_more_runs_than_bytes_loads() {
        let mut doc = crate::Doc::new();
        doc.set_peer_id(1).unwrap();
        for i in 0..40u8 {
            let c = char::from(b'a' + i % 26).to_string();
            doc.text("t").insert(0, &c).unwrap();
        }
        doc.commit();
        let bytes = doc.export(crate::ExportMode::Snapshot).unwrap();
        let (runs, column_bytes) = first_block_runs_and_bytes(&bytes);
        assert!(
            runs > column_bytes as u64,
            "{runs} runs in {column_bytes} bytes"
        );

        let mut copy = crate::Doc::new();
        copy.import(&bytes).unwrap();
        copy.load().unwrap();
        assert!(!copy.is_lazy());
        copy.assert_invariants();
        assert_eq!(copy.text("t").to_string(), doc.text("t").to_string());
        assert_eq!(copy.version(), doc.version());
        let from = crate::VersionVector::new();
        assert_eq!(
            copy.export(crate::ExportMode::Updates { from: &from })
                .unwrap(),
            doc.export(crate::ExportMode::Updates { from: &from })
                .unwrap()
        );
    }

    #[test]
    fn nth_varint_end_counts_terminal_bytes() {
        let bytes = [0x80, 0x01, 0x05, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0x81, 0x02, 3];
        let ends = [2, 3, 6, 7, 8, 9, 11, 12];
        assert_eq!(nth_varint_end(&bytes, 0), Some(0));
        for (n, &end) in ends.iter().enumerate() {
            assert_eq!(nth_varint_end(&bytes, n + 1), Some(end));
        }
        assert_eq!(nth_varint_end(&bytes, ends.len() + 1), None);
        assert_eq!(nth_varint_end(&[0x80; 20], 1), None);
    }
}
