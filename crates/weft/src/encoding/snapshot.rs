//! Writing and lazily reading snapshots (see the module doc of [`super`]
//! for the layout).
//!
//! Import reads only the header, the table's structure and the meta
//! entry ([`Snapshot::decode`]); a text's document-order text is
//! decompressed the first time it is read ([`LazyDoc::text`]); the history
//! is decoded into the op log when an operation needs it
//! ([`LazyDoc::load_history`]), and each text's tree is built bottom-up
//! from its segments when that text is edited ([`LazyDoc::build_text`]).

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use weft_kv::{MemKvStore, TableWriter};

use crate::error::{Error, Result};
use crate::id::{OpId, PeerId, Seq, NO_SEQ};
use crate::oplog::{origins_at, Mark, OpKind, OpLog, OpRun, NO_CONTENT};
use crate::text::{prefix_units, Cache, Item, TextState, TextTable, ANCHOR_END, STICKS_LEFT};
use crate::version::{Frontiers, VersionVector};

use super::bytes::{peer_at, unzigzag, write_bytes, write_varint, zigzag, Reader};
use super::history::{self, ReadKind};

const KEY_CHANGES: &[u8] = b"c";
const KEY_HISTORY: u8 = b'h';
const KEY_META: &[u8] = b"m";
const KEY_SEGMENTS: u8 = b's';
const KEY_TEXT: u8 = b't';

/// LZ4 never expands more than this per compressed byte, so a declared
/// size above `compressed * MAX_RATIO + 64` is a lie: nothing is
/// allocated for it.
const MAX_RATIO: usize = 255;

/// A key: one tag byte and a big-endian u32 (so keys sort by the number).
fn key(tag: u8, n: u32) -> [u8; 5] {
    [
        tag,
        (n >> 24) as u8,
        (n >> 16) as u8,
        (n >> 8) as u8,
        n as u8,
    ]
}

/// `raw` as a value stored as it is: a 0 byte, then the bytes. For data
/// LZ4 does not shrink (varint streams): storing it costs nothing to
/// encode and is read in place.
fn stored(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 1);
    out.push(0);
    out.extend_from_slice(raw);
    out
}

/// `raw` as a value: its varint length, then an LZ4 block (or stored when
/// that is not smaller).
fn compress(raw: &[u8]) -> Vec<u8> {
    if raw.is_empty() {
        return stored(raw);
    }
    let packed = lz4_flex::block::compress(raw);
    if packed.len() + 5 >= raw.len() {
        return stored(raw);
    }
    let mut out = Vec::with_capacity(packed.len() + 5);
    write_varint(&mut out, raw.len() as u64);
    out.extend_from_slice(&packed);
    out
}

/// Reverses [`stored`] and [`compress`]; `what` names the value in
/// errors.
fn decompress<'a>(value: &'a [u8], what: &'static str) -> Result<Cow<'a, [u8]>> {
    let mut r = Reader::new(value, 0);
    let malformed = Error::Malformed { offset: 0, what };
    let len = usize::try_from(r.varint()?).map_err(|_| malformed.clone())?;
    let packed = r.take(r.remaining())?;
    if len == 0 {
        return Ok(Cow::Borrowed(packed));
    }
    if len > packed.len().saturating_mul(MAX_RATIO).saturating_add(64) {
        return Err(malformed);
    }
    let mut out = vec![0u8; len];
    match lz4_flex::block::decompress_into(packed, &mut out) {
        Ok(n) if n == len => Ok(Cow::Owned(out)),
        _ => Err(malformed),
    }
}

/// A run of seq-contiguous items of one text, in document order, all
/// visible or all deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    seq: Seq,
    len: u32,
    deleted: bool,
}

/// What a snapshot says about one text.
#[derive(Debug, Clone)]
pub(crate) struct TextMeta {
    pub name: Box<str>,
    /// Visible chars, UTF-8 bytes, UTF-16 units and anchors.
    pub counts: Cache,
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
    store: MemKvStore,
    pub meta: Meta,
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// Encodes `log` and the state of every text as a snapshot body.
pub(crate) fn encode(log: &OpLog, texts: &TextTable) -> Vec<u8> {
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
    add(
        &mut w,
        KEY_CHANGES,
        &stored(&history::encode_changes(log, peer_index)),
    );
    let mut block = history::BlockWriter::new();
    let mut block_start = 0u32;
    for run in history::CanonicalRuns::new(log) {
        block.push(log, &run);
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

    // State: per text, its segments and its visible text in document order.
    let mut metas = Vec::with_capacity(texts.len());
    let mut states = Vec::with_capacity(texts.len());
    for state in texts.iter() {
        let mut segments: Vec<Segment> = Vec::new();
        let mut text = String::with_capacity(state.len(crate::error::Unit::Utf8) as usize);
        let mut counts = Cache::default();
        for item in state.items() {
            counts.add(item.counts());
            if !item.deleted {
                let s = item.byte_start as usize;
                text.push_str(log.content.get(s..s + item.bytes as usize).unwrap_or(""));
            }
            match segments.last_mut() {
                Some(last) if last.seq + last.len == item.seq && last.deleted == item.deleted => {
                    last.len += item.len;
                }
                _ => segments.push(Segment {
                    seq: item.seq,
                    len: item.len,
                    deleted: item.deleted,
                }),
            }
        }
        let mut seg_bytes = Vec::with_capacity(segments.len() * 4 + 8);
        write_varint(&mut seg_bytes, segments.len() as u64);
        for s in &segments {
            write_varint(
                &mut seg_bytes,
                (u64::from(s.len) << 1) | u64::from(s.deleted),
            );
        }
        let mut ends = RecentEnds::default();
        for s in &segments {
            write_varint(&mut seg_bytes, ends.encode(s.seq));
            ends.push(s.seq + s.len);
        }
        metas.push(TextMeta {
            name: state.name().into(),
            counts,
        });
        states.push((stored(&seg_bytes), compress(text.as_bytes())));
    }

    // Meta.
    let frontiers = log.frontiers();
    let mut meta = Vec::new();
    write_varint(&mut meta, u64::from(log.next_seq()));
    write_varint(&mut meta, peers.len() as u64);
    for p in &peers {
        meta.extend_from_slice(&p.to_le_bytes());
    }
    write_varint(&mut meta, metas.len() as u64);
    for m in &metas {
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
    add(&mut w, KEY_META, &meta);
    for (i, (segments, _)) in states.iter().enumerate() {
        add(&mut w, &key(KEY_SEGMENTS, i as u32), segments);
    }
    for (i, (_, text)) in states.iter().enumerate() {
        add(&mut w, &key(KEY_TEXT, i as u32), text);
    }
    w.finish()
}

impl Snapshot {
    /// Reads the table of a snapshot body (whose checksum the caller
    /// verified) and its meta entry.
    pub fn decode(body: &[u8]) -> Result<Snapshot> {
        let mut store = MemKvStore::new();
        store.import_all_unchecked(body).map_err(Error::Storage)?;
        let meta = decode_meta(store.get(KEY_META).ok_or(Error::Malformed {
            offset: 0,
            what: "snapshot meta entry",
        })?)?;
        for i in 0..meta.texts.len() as u32 {
            if store.get(&key(KEY_SEGMENTS, i)).is_none() || store.get(&key(KEY_TEXT, i)).is_none()
            {
                return Err(Error::Malformed {
                    offset: 0,
                    what: "snapshot text entry",
                });
            }
        }
        Ok(Snapshot { store, meta })
    }
}

fn decode_meta(bytes: &[u8]) -> Result<Meta> {
    let mut r = Reader::new(bytes, 0);
    let ops = r.u32("op count")?;
    if ops == NO_SEQ {
        return Err(Error::HistoryFull);
    }
    let n = r.count("peer count")?;
    let mut peers = Vec::with_capacity(n);
    for _ in 0..n {
        let p = r.u64_le()?;
        if p == PeerId::MAX {
            return Err(Error::InvalidPeerId(p));
        }
        peers.push(p);
    }
    let n = r.count("text count")?;
    let mut texts: Vec<TextMeta> = Vec::with_capacity(n);
    let mut names = std::collections::HashSet::with_capacity(n);
    for _ in 0..n {
        let name = std::str::from_utf8(r.bytes()?).map_err(|_| r.malformed("text name"))?;
        if !names.insert(name) {
            return Err(r.malformed("duplicate text name"));
        }
        let counts = Cache {
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

fn decode_segments(value: &[u8]) -> Result<Vec<Segment>> {
    let raw = decompress(value, "segments")?;
    let mut r = Reader::new(&raw, 0);
    // Every segment takes at least two bytes.
    let n = r.count("segment count")?;
    let mut segments = Vec::with_capacity(n);
    for _ in 0..n {
        let v = r.varint()?;
        let len = u32::try_from(v >> 1)
            .ok()
            .filter(|&l| l > 0)
            .ok_or_else(|| r.malformed("segment length"))?;
        segments.push(Segment {
            seq: 0,
            len,
            deleted: v & 1 == 1,
        });
    }
    let mut ends = RecentEnds::default();
    for s in &mut segments {
        let v = r.varint()?;
        s.seq = ends.decode(v).ok_or_else(|| r.malformed("segment start"))?;
        let end = s.seq.checked_add(s.len);
        ends.push(end.ok_or_else(|| r.malformed("segment length"))?);
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing segment bytes"));
    }
    Ok(segments)
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
        self.0.rotate_right(1);
        if let Some(first) = self.0.first_mut() {
            *first = end;
        }
    }
}

/// Byte length of the first `chars` chars of `text`, if it has that many.
fn bytes_of_chars(text: &str, chars: u32) -> Option<(usize, u32)> {
    let b = text.as_bytes();
    if b.get(..chars as usize).is_some_and(<[u8]>::is_ascii) {
        return Some((chars as usize, chars));
    }
    let (bytes, utf16) = prefix_units(b, chars);
    let got = crate::text::char_len(text.get(..bytes as usize)?);
    (got == chars).then_some((bytes as usize, utf16))
}

/// Sorts `keys` by their high 32 bits (LSD radix sort, three passes of
/// 11 bits: linear, where a comparison sort of segments cost more than
/// the rest of loading).
fn radix_sort_high(keys: &mut Vec<u64>) {
    let mut buf = vec![0u64; keys.len()];
    for pass in 0..3u32 {
        let shift = 32 + pass * 11;
        let mut counts = [0usize; 2048];
        for k in keys.iter() {
            if let Some(c) = counts.get_mut(((k >> shift) & 2047) as usize) {
                *c += 1;
            }
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for &k in keys.iter() {
            if let Some(c) = counts.get_mut(((k >> shift) & 2047) as usize) {
                if let Some(slot) = buf.get_mut(*c) {
                    *slot = k;
                }
                *c += 1;
            }
        }
        std::mem::swap(keys, &mut buf);
    }
}

/// Whether two of `segs` (all below `limit`) share a seq. O(limit / 64 +
/// segments) with a bitset, no sorting.
fn overlapping(segs: &[Segment], limit: Seq) -> bool {
    let words = (limit as usize).div_ceil(64);
    if words > segs.len().saturating_mul(8).max(1024) {
        // Few segments over a huge seq range (only a forged snapshot has
        // that): sort them instead, so memory follows the input's size.
        let mut ranges: Vec<(Seq, Seq)> = segs.iter().map(|s| (s.seq, s.seq + s.len)).collect();
        ranges.sort_unstable();
        return ranges.windows(2).any(|w| matches!(w, [a, b] if a.1 > b.0));
    }
    let mut seen = vec![0u64; words];
    for s in segs {
        let (mut at, end) = (s.seq as usize, (s.seq + s.len) as usize);
        while at < end {
            let (word, bit) = (at / 64, at % 64);
            let n = (64 - bit).min(end - at);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << bit
            };
            let Some(w) = seen.get_mut(word) else {
                return true;
            };
            if *w & mask != 0 {
                return true;
            }
            *w |= mask;
            at += n;
        }
    }
    false
}

/// What [`LazyDoc::load_history`] leaves for building the texts.
#[derive(Debug, Clone)]
struct Loaded {
    /// Byte range of each text's document-order text in the log's content.
    text_ranges: Vec<Range<usize>>,
    segments: Vec<Vec<Segment>>,
    /// Per text and segment, the index of the op run holding its first
    /// seq (found in one pass in seq order instead of a search each).
    first_runs: Vec<Vec<u32>>,
}

/// A document's view of a snapshot it imported lazily.
#[derive(Debug, Clone)]
pub(crate) struct LazyDoc {
    snap: Arc<Snapshot>,
    /// Each text's document-order text, decompressed on first read.
    texts: Arc<[OnceLock<Result<String>>]>,
    /// The document's text index of each snapshot text.
    doc_index: Vec<u32>,
    loaded: Option<Loaded>,
    /// Texts whose trees are not built yet.
    unbuilt: usize,
}

impl LazyDoc {
    pub fn new(snap: Snapshot, doc_index: Vec<u32>) -> LazyDoc {
        let n = snap.meta.texts.len();
        LazyDoc {
            texts: (0..n).map(|_| OnceLock::new()).collect(),
            snap: Arc::new(snap),
            doc_index,
            loaded: None,
            unbuilt: n,
        }
    }

    pub fn meta(&self) -> &Meta {
        &self.snap.meta
    }

    /// Whether the history is in the op log.
    pub fn history_loaded(&self) -> bool {
        self.loaded.is_some()
    }

    /// Whether nothing is left to load (the document can drop this).
    pub fn is_done(&self) -> bool {
        self.loaded.is_some() && self.unbuilt == 0
    }

    /// The visible text of snapshot text `i`, in document order.
    pub fn text(&self, i: u32) -> Result<&str> {
        let cell = self.texts.get(i as usize).ok_or(Error::Malformed {
            offset: 0,
            what: "snapshot text index",
        })?;
        let meta = self.snap.meta.texts.get(i as usize);
        cell.get_or_init(|| {
            let value = self.snap.store.get(&key(KEY_TEXT, i)).unwrap_or(&[]);
            let raw = decompress(value, "snapshot text")?;
            let text = String::from_utf8(raw.into_owned()).map_err(|_| Error::Malformed {
                offset: 0,
                what: "snapshot text UTF-8",
            })?;
            if meta.map(|m| m.counts.utf8 as usize) != Some(text.len()) {
                return Err(Error::Malformed {
                    offset: 0,
                    what: "snapshot text length",
                });
            }
            Ok(text)
        })
        .as_deref()
        .map_err(Clone::clone)
    }

    /// Decodes the history into `log` (which must be empty). Checks
    /// everything first: on error `log` is unchanged.
    pub fn load_history(&mut self, log: &mut OpLog) -> Result<()> {
        if self.loaded.is_some() {
            return Ok(());
        }
        let bad = |what| Error::Malformed { offset: 0, what };
        let n = self.snap.meta.texts.len();
        let mut texts = Vec::with_capacity(n);
        let mut segments = Vec::with_capacity(n);
        // Every segment: (seq, len, deleted, text, byte range if visible).
        let mut all: Vec<(Segment, u32, Range<usize>)> = Vec::new();
        for i in 0..n as u32 {
            let text = self.text(i)?;
            let segs = decode_segments(self.snap.store.get(&key(KEY_SEGMENTS, i)).unwrap_or(&[]))?;
            all.reserve(segs.len());
            let mut at = 0usize;
            for s in &segs {
                let mut range = at..at;
                if !s.deleted {
                    let rest = text.get(at..).unwrap_or("");
                    let (bytes, _) = bytes_of_chars(rest, s.len).ok_or(bad("segment text"))?;
                    range = at..at + bytes;
                    at += bytes;
                }
                all.push((*s, i, range));
            }
            if at != text.len() {
                return Err(bad("unused snapshot text"));
            }
            texts.push(text);
            segments.push(segs);
        }
        // In seq order (sorted as packed integers: much cheaper than
        // sorting the entries). The text of the visible chars in this
        // order is the content of the history's inserts.
        let mut order: Vec<u64> = all
            .iter()
            .enumerate()
            .map(|(k, v)| (u64::from(v.0.seq) << 32) | k as u64)
            .collect();
        radix_sort_high(&mut order);
        let by_seq: Vec<&(Segment, u32, Range<usize>)> = order
            .iter()
            .filter_map(|k| all.get((*k & 0xFFFF_FFFF) as usize))
            .collect();
        let total: usize = all.iter().map(|v| v.2.len()).sum();
        let mut new = OpLog::default();
        // Op runs: about one per segment (inserts split by visibility)
        // plus the deletes; a guess that saves most regrowth.
        new.ops.reserve(all.len() + all.len() / 2);
        new.content
            .reserve(total + texts.iter().map(|t| t.len()).sum::<usize>());
        for (_, i, range) in &by_seq {
            let text = texts.get(*i as usize).copied().unwrap_or("");
            new.content.push_str(text.get(range.clone()).unwrap_or(""));
        }

        let meta = &self.snap.meta;
        let changes = self
            .snap
            .store
            .get(KEY_CHANGES)
            .ok_or(bad("change table"))?;
        history::decode_changes(&decompress(changes, "change table")?, &meta.peers, &mut new)?;
        if new.next_seq() != meta.ops {
            return Err(bad("change table"));
        }
        let mut cursor = SegmentCursor {
            segs: &by_seq,
            i: 0,
            content_at: 0,
        };
        let mut seq = 0;
        while seq < meta.ops {
            let value = self
                .snap
                .store
                .get(&key(KEY_HISTORY, seq))
                .ok_or(bad("history block"))?;
            let block = decompress(value, "history block")?;
            let end =
                history::decode_block(&block, seq, meta.ops, n as u32, |seq, len, t, kind| {
                    let text = self
                        .doc_index
                        .get(t as usize)
                        .copied()
                        .ok_or(bad("text index"))?;
                    push_run(&mut new, &mut cursor, seq, len, text, kind)
                })?;
            if end == seq {
                return Err(bad("history block"));
            }
            seq = end;
        }
        if cursor.content_at != total
            || new.version() != meta.version
            || new.frontiers() != meta.frontiers
        {
            return Err(bad("snapshot history"));
        }
        // Each segment's first op run, walking both in seq order.
        let mut run_of = vec![0u32; all.len()];
        let mut ri = 0usize;
        for key in &order {
            let seq = (key >> 32) as Seq;
            while new.ops.get(ri).is_some_and(|r| r.end() <= seq) {
                ri += 1;
            }
            if let Some(slot) = run_of.get_mut((key & 0xFFFF_FFFF) as usize) {
                *slot = ri as u32;
            }
        }
        let mut first_runs = Vec::with_capacity(n);
        let mut rest = run_of.as_slice();
        for segs in &segments {
            let (head, tail) = rest.split_at(segs.len().min(rest.len()));
            first_runs.push(head.to_vec());
            rest = tail;
        }
        let mut text_ranges = Vec::with_capacity(n);
        for text in &texts {
            let start = new.content.len();
            new.content.push_str(text);
            text_ranges.push(start..new.content.len());
        }
        if new.content.len() >= NO_CONTENT as usize {
            return Err(Error::HistoryFull);
        }
        *log = new;
        self.loaded = Some(Loaded {
            text_ranges,
            segments,
            first_runs,
        });
        Ok(())
    }

    /// Builds `state`'s tree from its segments (the history must be
    /// loaded). Checks everything first: on error `state` is unchanged.
    pub fn build_text(&mut self, log: &OpLog, state: &mut TextState) -> Result<()> {
        let Some(unloaded) = state.unloaded() else {
            return Ok(());
        };
        let bad = |what| Error::Malformed { offset: 0, what };
        let loaded = self.loaded.as_ref().ok_or(bad("snapshot state"))?;
        let i = unloaded.index as usize;
        let segs = loaded.segments.get(i).ok_or(bad("snapshot text index"))?;
        let first_runs = loaded.first_runs.get(i).ok_or(bad("snapshot text index"))?;
        let range = loaded
            .text_ranges
            .get(i)
            .cloned()
            .ok_or(bad("snapshot text index"))?;
        let t = self
            .doc_index
            .get(i)
            .copied()
            .ok_or(bad("snapshot text index"))?;
        let content = log.content.get(..range.end).ok_or(bad("snapshot text"))?;
        let mut items: Vec<Item> = Vec::with_capacity(segs.len() + segs.len() / 2);
        let mut at = range.start;
        let mut covered = 0u64;
        for (j, seg) in segs.iter().enumerate() {
            let end = seg
                .seq
                .checked_add(seg.len)
                .filter(|&e| e <= log.next_seq());
            let end = end.ok_or(bad("segment"))?;
            let mut s = seg.seq;
            let mut ri = match first_runs.get(j).map(|&r| r as usize) {
                Some(r)
                    if log
                        .ops
                        .get(r)
                        .is_some_and(|run| run.seq <= s && s < run.end()) =>
                {
                    r
                }
                _ => log.op_index(s),
            };
            while s < end {
                let run = log.ops.get(ri).filter(|r| r.text == t && r.seq <= s);
                let run = run.ok_or(bad("segment op"))?;
                let upto = run.end().min(end);
                let off = s - run.seq;
                match run.kind {
                    OpKind::Insert { .. } => {
                        let (origin_left, origin_right) = origins_at(run, off);
                        let mut item = Item {
                            seq: s,
                            len: upto - s,
                            origin_left,
                            origin_right,
                            byte_start: NO_CONTENT,
                            bytes: 0,
                            utf16: 0,
                            deleted: seg.deleted,
                            anchor: 0,
                        };
                        if !seg.deleted {
                            let rest = content.get(at..).unwrap_or("");
                            let (bytes, utf16) =
                                bytes_of_chars(rest, item.len).ok_or(bad("segment text"))?;
                            item.byte_start = at as u32;
                            item.bytes = bytes as u32;
                            item.utf16 = utf16;
                            at += bytes;
                        }
                        items.push(item);
                    }
                    OpKind::MarkStart {
                        origin_left,
                        origin_right,
                        mark,
                    }
                    | OpKind::MarkEnd {
                        origin_left,
                        origin_right,
                        mark,
                    } => {
                        let m = log.marks.get(mark as usize).ok_or(bad("mark"))?;
                        if !seg.deleted {
                            return Err(bad("visible anchor"));
                        }
                        let end = matches!(run.kind, OpKind::MarkEnd { .. });
                        let sticks_left = m.expand.anchor_sticks_left(end);
                        let flags = if sticks_left { STICKS_LEFT } else { 0 }
                            | if end { ANCHOR_END } else { 0 };
                        let mut item = Item::anchor(s, mark, flags);
                        item.origin_left = origin_left;
                        item.origin_right = origin_right;
                        items.push(item);
                    }
                    OpKind::Delete { .. } => return Err(bad("segment op")),
                }
                covered += u64::from(upto - s);
                s = upto;
                ri += 1;
            }
        }
        if at != range.end {
            return Err(bad("unused snapshot text"));
        }
        // Every insert and anchor of the text, each exactly once.
        let ops: u64 = log
            .ops
            .iter()
            .filter(|r| r.text == t && !matches!(r.kind, OpKind::Delete { .. }))
            .map(|r| u64::from(r.len))
            .sum();
        if covered != ops || overlapping(segs, log.next_seq()) {
            return Err(bad("snapshot segments"));
        }
        let mut counts = Cache::default();
        for item in &items {
            counts.add(item.counts());
        }
        if counts != unloaded.counts {
            return Err(bad("snapshot text counts"));
        }
        state.install(items);
        self.unbuilt = self.unbuilt.saturating_sub(1);
        Ok(())
    }
}

/// Loads the history and `state`'s tree from the lazily imported
/// snapshot in `slot` (if any), and drops the snapshot once nothing is
/// left to load. On error nothing changed.
pub(crate) fn load_text(
    slot: &mut Option<Box<LazyDoc>>,
    log: &mut OpLog,
    state: &mut TextState,
) -> Result<()> {
    if let Some(lazy) = slot.as_deref_mut() {
        lazy.load_history(log)?;
        lazy.build_text(log, state)?;
        if lazy.is_done() {
            *slot = None;
        }
    }
    Ok(())
}

/// Walks the segments of all texts in seq order beside the history's
/// inserts, handing out their content.
struct SegmentCursor<'a> {
    segs: &'a [&'a (Segment, u32, Range<usize>)],
    i: usize,
    /// Bytes of the op-order content handed out so far.
    content_at: usize,
}

/// Index of the op run holding `seq` (an earlier op): most references
/// are to the last few runs, so those are tried before a search.
fn run_index_at(log: &OpLog, seq: Seq) -> usize {
    let n = log.ops.len();
    for back in 1..=4 {
        let Some(i) = n.checked_sub(back) else { break };
        match log.ops.get(i) {
            Some(r) if r.seq <= seq => return i,
            _ => {}
        }
    }
    log.op_index(seq)
}

fn run_at(log: &OpLog, seq: Seq) -> Option<&OpRun> {
    log.ops.get(run_index_at(log, seq))
}

/// Checks one op run read from a block against the log built so far and
/// appends it (inserts split where their chars' visibility changes).
fn push_run(
    log: &mut OpLog,
    cursor: &mut SegmentCursor<'_>,
    seq: Seq,
    len: u32,
    text: u32,
    kind: ReadKind,
) -> Result<()> {
    let bad = |what| Error::Malformed { offset: 0, what };
    // An origin: a char of the same text, or none. Most refer to the
    // last run, so look there before searching.
    let char_of_text = |log: &OpLog, s: Seq| -> bool {
        if s == NO_SEQ {
            return true;
        }
        run_at(log, s).is_some_and(|r| r.text == text && matches!(r.kind, OpKind::Insert { .. }))
    };
    let push = |log: &mut OpLog, kind: OpKind| {
        log.ops.push(OpRun {
            seq,
            len,
            text,
            kind,
        });
    };
    match kind {
        ReadKind::Insert { left, right } => {
            if !char_of_text(log, left) || !char_of_text(log, right) {
                return Err(bad("origin"));
            }
            let run = OpRun {
                seq,
                len,
                text,
                kind: OpKind::Insert {
                    origin_left: left,
                    origin_right: right,
                    byte_start: NO_CONTENT,
                    bytes: 0,
                },
            };
            let end = seq + len;
            let mut at = seq;
            while at < end {
                // The segment holding `at`.
                while cursor
                    .segs
                    .get(cursor.i)
                    .is_some_and(|s| s.0.seq + s.0.len <= at)
                {
                    cursor.i += 1;
                }
                let (seg, _, _) = cursor
                    .segs
                    .get(cursor.i)
                    .ok_or(bad("insert without segment"))?;
                if seg.seq > at {
                    return Err(bad("insert without segment"));
                }
                let upto = (seg.seq + seg.len).min(end);
                let (origin_left, origin_right) = origins_at(&run, at - seq);
                let (byte_start, bytes) = if seg.deleted {
                    (NO_CONTENT, 0)
                } else {
                    let rest = log.content.get(cursor.content_at..).unwrap_or("");
                    let (bytes, _) = bytes_of_chars(rest, upto - at).ok_or(bad("content"))?;
                    let start = cursor.content_at;
                    cursor.content_at += bytes;
                    (start as u32, bytes as u32)
                };
                log.ops.push(OpRun {
                    seq: at,
                    len: upto - at,
                    text,
                    kind: OpKind::Insert {
                        origin_left,
                        origin_right,
                        byte_start,
                        bytes,
                    },
                });
                at = upto;
            }
        }
        ReadKind::Delete { target, reversed } => {
            let (lo, hi) = if reversed {
                (target + 1 - len, target)
            } else {
                (target, target + len - 1)
            };
            // The targets are chars of this text.
            let mut i = run_index_at(log, lo);
            while let Some(r) = log.ops.get(i).filter(|r| r.seq <= hi) {
                if r.text != text || !matches!(r.kind, OpKind::Insert { .. }) {
                    return Err(bad("delete targets"));
                }
                i += 1;
            }
            push(log, OpKind::Delete { target, reversed });
        }
        ReadKind::MarkStart {
            left,
            right,
            key,
            value,
            expand,
        } => {
            // Glued to one side only, as the rule says (see `import.rs`).
            let glue_ok = if expand.anchor_sticks_left(false) {
                right == NO_SEQ
            } else {
                left == NO_SEQ
            };
            if !glue_ok || !char_of_text(log, left) || !char_of_text(log, right) {
                return Err(bad("mark glue"));
            }
            let mark = log.marks.len() as u32;
            let key = log.keys.intern(&key);
            let change = log.changes.get(log.change_index(seq)).ok_or(bad("mark"))?;
            let peer = log.peers.get(change.peer);
            log.marks.push(Mark {
                key,
                value,
                expand,
                lamport: log.lamport_of(seq),
                peer,
                start: seq,
                end: NO_SEQ,
            });
            push(
                log,
                OpKind::MarkStart {
                    origin_left: left,
                    origin_right: right,
                    mark,
                },
            );
        }
        ReadKind::MarkEnd { left, right, start } => {
            if !char_of_text(log, left) || !char_of_text(log, right) {
                return Err(bad("origin"));
            }
            let mark = match log.ops.get(log.op_index(start)).map(|r| (r.text, r.kind)) {
                Some((rt, OpKind::MarkStart { mark, .. })) if rt == text => mark,
                _ => return Err(bad("mark start")),
            };
            let m = log.marks.get_mut(mark as usize).ok_or(bad("mark"))?;
            let glue_ok = if m.expand.anchor_sticks_left(true) {
                right == NO_SEQ
            } else {
                left == NO_SEQ
            };
            if m.end != NO_SEQ || !glue_ok {
                return Err(bad("mark end"));
            }
            m.end = seq;
            push(
                log,
                OpKind::MarkEnd {
                    origin_left: left,
                    origin_right: right,
                    mark,
                },
            );
        }
    }
    Ok(())
}
