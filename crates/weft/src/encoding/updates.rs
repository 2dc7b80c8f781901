//! Writing and reading the updates format (see the module doc of
//! [`super`] for the byte layout).

use super::packed::{is_compressed, pack, unpack, Codec, Framing};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::id::{Counter, MapIdx, OpId, PeerId, Seq, TextIdx, NO_SEQ};
use crate::merge::{MapWrite, MarkSet, Update, UpdateChange, UpdateKind, UpdateRun};
use crate::oplog::{Change, CommitInfo, OpKind, OpLog, OpRun, NO_CONTENT};
use crate::style::ExpandType;
use crate::text::TextTable;
use crate::unit::char_len;
use crate::value::Value;

use super::value_bytes::{
    read_map_value, read_object_ref, read_object_table, read_string, read_value, write_map_value,
    write_value, ObjectTable,
};
use crate::bytes::{
    bounded_capacity, peer_at, unzigzag, write_bytes, write_varint, zigzag, Reader,
};

const KIND_INSERT: u8 = 0;
const KIND_INSERT_CONTINUED: u8 = 1;
const KIND_DELETE: u8 = 2;
const KIND_DELETE_BACKWARDS: u8 = 3;
const FLAG_NO_CONTENT: u8 = 1 << 2;
/// With a delete kind, bit 2 makes a mark op instead: 2 | 4 start anchor,
/// 3 | 4 end anchor.
const KIND_MARK_START: u8 = KIND_DELETE | FLAG_NO_CONTENT;
const KIND_MARK_END: u8 = KIND_DELETE_BACKWARDS | FLAG_NO_CONTENT;
const FLAG_TEXT: u8 = 1 << 3;
/// A mark start kind byte with no packed length and then an explicit
/// length of 0 (no run is empty) starts an op of a kind added later:
/// a u8 sub-kind follows (format version 3).
const SUBKIND_MAP_SET: u8 = 0;
/// The sub-kind of a cancel run (format version 5): varint length, varint
/// text index, then the first target as an id relative to the run's own
/// first id.
const SUBKIND_CANCEL: u8 = 1;

/// Assigns small indexes to peers and texts in order of first use.
#[derive(Default)]
struct Tables {
    peers: Vec<PeerId>,
    peer_index: HashMap<PeerId, u64>,
    texts: Vec<TextIdx>,
    text_index: HashMap<TextIdx, u64>,
    maps: Vec<MapIdx>,
    map_index: HashMap<MapIdx, u64>,
}

impl Tables {
    fn peer(&mut self, peer: PeerId) -> u64 {
        let next = self.peers.len() as u64;
        let i = *self.peer_index.entry(peer).or_insert(next);
        if i == next {
            self.peers.push(peer);
        }
        i
    }

    fn map(&mut self, map: MapIdx) -> u64 {
        let next = self.maps.len() as u64;
        let i = *self.map_index.entry(map).or_insert(next);
        if i == next {
            self.maps.push(map);
        }
        i
    }

    fn text(&mut self, text: TextIdx) -> u64 {
        let next = self.texts.len() as u64;
        let i = *self.text_index.entry(text).or_insert(next);
        if i == next {
            self.texts.push(text);
        }
        i
    }

    /// Writes `id` relative to `base` (see the module doc).
    fn id(&mut self, out: &mut Vec<u8>, id: Option<OpId>, base: OpId) {
        match id {
            None => write_varint(out, 0),
            Some(id) if id.peer == base.peer => {
                let delta = i64::from(base.counter) - i64::from(id.counter);
                write_varint(out, (zigzag(delta) << 1) | 1);
            }
            Some(id) => {
                let p = self.peer(id.peer);
                write_varint(out, (p + 1) << 1);
                write_varint(out, u64::from(id.counter));
            }
        }
    }
}

/// Writes the kind byte of a run, with its length packed in when it fits.
fn write_kind(out: &mut Vec<u8>, kind: u8, len: u32) {
    if (1..16).contains(&len) {
        out.push(kind | (len as u8) << 4);
    } else {
        out.push(kind);
        write_varint(out, u64::from(len));
    }
}

/// Encodes the ops `pieces` of `log` with the commit infos `infos`.
/// Texts are named through `texts`. Returns the body (without header)
/// and its format version: 1, 2 with commit infos, 3 with map ops.
pub(crate) fn encode_body(
    log: &OpLog,
    texts: &TextTable,
    pieces: &[(usize, Range<Seq>)],
    infos: &[&CommitInfo],
) -> (Vec<u8>, u8) {
    let mut w = RunWriter {
        log,
        t: Tables::default(),
        ops: Vec::new(),
        content: Vec::new(),
        embeds: Vec::new(),
        embed_count: 0,
        objects: ObjectTable::default(),
        prev_insert: None,
        cur_text: 0,
        last_ref: None,
        cancels: false,
    };
    let mut changes = Vec::new();
    write_varint(&mut changes, pieces.len() as u64);
    let mut next_counter: HashMap<PeerId, Counter> = HashMap::new();
    for (ci, range) in pieces {
        let Some(change) = log.changes().get(*ci) else {
            continue;
        };
        write_change(
            &mut changes,
            &mut w.t,
            &mut next_counter,
            log,
            change,
            range,
        );
        // The ops of the piece, clipped to it.
        log.for_each_clipped_run(range, |run| w.write_run(run));
    }

    let RunWriter {
        t,
        ops,
        content,
        embeds,
        embed_count,
        objects,
        ..
    } = w;
    let mut body = Vec::with_capacity(changes.len() + ops.len() + content.len() + 64);
    let mut peers = Vec::with_capacity(t.peers.len() * 8 + 4);
    write_varint(&mut peers, t.peers.len() as u64);
    for p in &t.peers {
        peers.extend_from_slice(&p.to_le_bytes());
    }
    write_bytes(&mut body, &peers);
    let mut names = Vec::new();
    write_varint(&mut names, t.texts.len() as u64);
    for &ti in &t.texts {
        write_bytes(
            &mut names,
            texts.get(ti).map_or(&[][..], |t| t.name().as_bytes()),
        );
    }
    write_bytes(&mut body, &names);
    write_bytes(&mut body, &changes);
    write_bytes(&mut body, &ops);
    // Version 5 when the content compresses (a long history: prose
    // compresses 2-3x; the value names its codec), else the smallest
    // version that holds the update, byte for byte as older writers
    // wrote it.
    let packed = pack(&content, Codec::Lz4);
    let version = if is_compressed(&packed) || w.cancels {
        write_bytes(&mut body, &packed);
        5
    } else {
        write_bytes(&mut body, &content);
        if !t.maps.is_empty() || embed_count > 0 {
            3
        } else if !infos.is_empty() {
            2
        } else {
            1
        }
    };
    if version >= 2 {
        let mut section = Vec::new();
        super::commit_infos::write_infos(&mut section, infos.iter().copied());
        write_bytes(&mut body, &section);
    }
    if version >= 3 {
        let mut maps = Vec::new();
        write_varint(&mut maps, t.maps.len() as u64);
        for &m in &t.maps {
            write_bytes(&mut maps, log.map_names().name(m).as_bytes());
        }
        write_bytes(&mut body, &maps);
        let mut section = Vec::with_capacity(embeds.len() + 4);
        objects.write(&mut section);
        write_varint(&mut section, embed_count);
        section.extend_from_slice(&embeds);
        write_bytes(&mut body, &section);
    }
    (body, version)
}

/// Writes the header of the part `range` (seqs) of `change`: peer,
/// counter (0 when it continues this update's previous change of the
/// peer), length and deps (the change's, or its own previous op when only
/// a suffix is exported).
fn write_change(
    out: &mut Vec<u8>,
    t: &mut Tables,
    next_counter: &mut HashMap<PeerId, Counter>,
    log: &OpLog,
    change: &Change,
    range: &Range<Seq>,
) {
    let peer = log.peers().get(change.peer);
    let counter = change.counter + (range.start - change.seq);
    write_varint(out, t.peer(peer));
    let expected = next_counter.insert(peer, counter + (range.end - range.start));
    write_varint(
        out,
        if expected == Some(counter) {
            0
        } else {
            u64::from(counter) + 1
        },
    );
    write_varint(out, u64::from(range.end - range.start));
    let deps: SmallVec<[OpId; 2]> = if range.start > change.seq {
        SmallVec::new()
    } else {
        log.deps(change).iter().map(|&d| log.seq_to_id(d)).collect()
    };
    let own =
        counter > 0 && (range.start > change.seq || deps.contains(&OpId::new(peer, counter - 1)));
    let explicit: SmallVec<[OpId; 2]> = deps
        .into_iter()
        .filter(|d| !(own && *d == OpId::new(peer, counter - 1)))
        .collect();
    write_varint(out, ((explicit.len() as u64) << 1) | u64::from(own));
    for d in explicit {
        let p = t.peer(d.peer);
        write_varint(out, p);
        write_varint(out, u64::from(d.counter));
    }
}

/// Writes op runs, keeping what later runs are written relative to.
struct RunWriter<'a> {
    log: &'a OpLog,
    t: Tables,
    ops: Vec<u8>,
    content: Vec<u8>,
    /// The embeds section (without its object table and count), the
    /// count and the distinct objects.
    embeds: Vec<u8>,
    embed_count: u64,
    objects: ObjectTable,
    /// The last insert written: (end seq, origin_right, text).
    prev_insert: Option<(Seq, Seq, TextIdx)>,
    /// The text index (in the update's table) of the previous run.
    cur_text: u64,
    /// The id the next reference is written relative to.
    last_ref: Option<OpId>,
    /// Whether a cancel run was written (version 5 then).
    cancels: bool,
}

impl RunWriter<'_> {
    /// Writes one clipped run (see [`OpLog::missing`]).
    #[inline(always)]
    fn write_run(&mut self, piece: &OpRun) {
        if let OpKind::MapSet { set } = piece.kind {
            self.write_map_set(set);
            return;
        }
        if let OpKind::Cancel { target } = piece.kind {
            self.write_cancel(piece, target);
            return;
        }
        let text_idx = self.t.text(piece.text);
        let text_flag = if text_idx != self.cur_text {
            self.cur_text = text_idx;
            FLAG_TEXT
        } else {
            0
        };
        match piece.kind {
            OpKind::Insert {
                origin_left,
                origin_right,
                byte_start,
                bytes,
            } => self.write_insert(
                piece,
                text_flag,
                (origin_left, origin_right),
                byte_start,
                bytes,
            ),
            OpKind::MarkStart { .. } | OpKind::MarkEnd { .. } => self.write_mark(piece, text_flag),
            OpKind::MapSet { .. } | OpKind::Cancel { .. } => {}
            OpKind::Delete { target, reversed } => {
                self.write_kind(
                    if reversed {
                        KIND_DELETE_BACKWARDS
                    } else {
                        KIND_DELETE
                    } | text_flag,
                    piece.len,
                );
                let own = self.log.seq_to_id(piece.seq);
                let target_id = self.log.seq_to_id(target);
                self.t
                    .id(&mut self.ops, Some(target_id), self.last_ref.unwrap_or(own));
                self.last_ref = piece
                    .delete_targets(piece.len - 1, 1)
                    .map(|t| self.log.seq_to_id(t.start));
                self.prev_insert = None;
            }
        }
    }

    /// The kind byte, the length if it does not fit in, and the text index
    /// when it changes.
    fn write_kind(&mut self, kind: u8, len: u32) {
        write_kind(&mut self.ops, kind, len);
        if kind & FLAG_TEXT != 0 {
            write_varint(&mut self.ops, self.cur_text);
        }
    }

    /// An insert run: origins unless it continues the previous one, and
    /// its text unless the update also deletes it.
    #[inline(always)]
    fn write_insert(
        &mut self,
        piece: &OpRun,
        text_flag: u8,
        (origin_left, origin_right): (Seq, Seq),
        byte_start: u32,
        bytes: u32,
    ) {
        let log = self.log;
        let continued = self.prev_insert == Some((piece.seq, origin_right, piece.text))
            && origin_left == piece.seq - 1;
        let mut kind = if continued {
            KIND_INSERT_CONTINUED
        } else {
            KIND_INSERT
        };
        if byte_start == NO_CONTENT {
            kind |= FLAG_NO_CONTENT;
        }
        self.write_kind(kind | text_flag, piece.len);
        if !continued {
            self.write_origins(log.seq_to_id(piece.seq), origin_left, origin_right);
        }
        self.last_ref = Some(log.seq_to_id(piece.end() - 1));
        if byte_start != NO_CONTENT {
            let s = byte_start as usize;
            self.content.extend_from_slice(
                log.content()
                    .as_bytes()
                    .get(s..s + bytes as usize)
                    .unwrap_or(&[]),
            );
        }
        self.prev_insert = Some((piece.end(), origin_right, piece.text));
        if !log.objects().is_empty() {
            for (&seq, object) in log.objects().range(piece.seq..piece.end()) {
                let id = log.seq_to_id(seq);
                let p = self.t.peer(id.peer);
                write_varint(&mut self.embeds, p);
                write_varint(&mut self.embeds, u64::from(id.counter));
                write_varint(&mut self.embeds, u64::from(self.objects.add(object)));
                self.embed_count += 1;
            }
        }
    }

    /// The origins of an insert or anchor whose first op is `own`: the
    /// left one relative to the cursor, the right one to the left one.
    #[inline(always)]
    fn write_origins(&mut self, own: OpId, origin_left: Seq, origin_right: Seq) {
        let log = self.log;
        let id = |s: Seq| (s != NO_SEQ).then(|| log.seq_to_id(s));
        let left = id(origin_left);
        self.t.id(&mut self.ops, left, self.last_ref.unwrap_or(own));
        self.t
            .id(&mut self.ops, id(origin_right), left.unwrap_or(own));
    }

    /// A cancel run: the escape, its length, text and first target
    /// (relative to its own first id). Leaves the cursor where it was.
    fn write_cancel(&mut self, piece: &OpRun, target: Seq) {
        self.cancels = true;
        self.ops.push(KIND_MARK_START);
        write_varint(&mut self.ops, 0);
        self.ops.push(SUBKIND_CANCEL);
        write_varint(&mut self.ops, u64::from(piece.len));
        let text = self.t.text(piece.text);
        write_varint(&mut self.ops, text);
        let own = self.log.seq_to_id(piece.seq);
        let target = self.log.seq_to_id(target);
        self.t.id(&mut self.ops, Some(target), own);
        self.prev_insert = None;
    }

    /// A map op: the escape, its map's index, key and value (u8 0 for a
    /// delete, else 1 and the value). Leaves the cursor where it was.
    fn write_map_set(&mut self, set: crate::id::MapSetIdx) {
        let Some(m) = self.log.map_set(set) else {
            return;
        };
        self.ops.push(KIND_MARK_START);
        write_varint(&mut self.ops, 0);
        self.ops.push(SUBKIND_MAP_SET);
        let map = self.t.map(m.map);
        write_varint(&mut self.ops, map);
        write_bytes(&mut self.ops, m.key.as_bytes());
        write_map_value(&mut self.ops, m.value.as_ref());
        self.prev_insert = None;
    }

    /// A mark's start anchor (with its key, value and rule) or end anchor
    /// (with its start's id).
    fn write_mark(&mut self, piece: &OpRun, text_flag: u8) {
        let log = self.log;
        let Some(a) = piece.kind.anchor() else {
            return;
        };
        let start = !a.end;
        let kind = if start {
            KIND_MARK_START
        } else {
            KIND_MARK_END
        };
        self.write_kind(kind | text_flag, 1);
        let own = log.seq_to_id(piece.seq);
        self.write_origins(own, a.origin_left, a.origin_right);
        let m = log.mark(a.mark);
        if start {
            self.ops.push(m.map_or(0, |m| m.expand.to_byte()));
            write_bytes(
                &mut self.ops,
                m.map_or("", |m| log.keys().name(m.key)).as_bytes(),
            );
            write_value(&mut self.ops, m.map_or(&Value::Null, |m| &m.value));
        } else {
            let start = m.map_or(own, |m| log.seq_to_id(m.start));
            self.t.id(&mut self.ops, Some(start), own);
        }
        self.last_ref = Some(own);
        self.prev_insert = None;
    }
}

/// Reads an id written by [`Tables::id`] relative to `base`. (Inlined:
/// three of them per run, and the call cost a quarter of it.)
#[inline(always)]
fn read_id(r: &mut Reader<'_>, peers: &[PeerId], base: OpId) -> Result<Option<OpId>> {
    let v = r.varint()?;
    if v == 0 {
        return Ok(None);
    }
    if v & 1 == 1 {
        let counter = i64::from(base.counter) - unzigzag(v >> 1);
        let counter = u32::try_from(counter).map_err(|_| r.malformed("counter"))?;
        return Ok(Some(OpId::new(base.peer, counter)));
    }
    let peer = peer_at(r, peers, (v >> 1) - 1)?;
    let counter = r.u32("counter")?;
    Ok(Some(OpId::new(peer, counter)))
}

/// Decodes and structurally validates an update body of format `version`
/// (1, or 2 with a sixth section: the commit infos).
pub(crate) fn decode_body(body: &[u8], version: u8) -> Result<Update> {
    let mut r = Reader::new(body, 0);

    let mut s = r.section()?;
    let n = s.count("peer count")?;
    let mut peers = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        let peer = s.u64_le()?;
        if peer == PeerId::MAX {
            return Err(Error::InvalidPeerId(peer));
        }
        peers.push(peer);
    }

    let mut s = r.section()?;
    let n = s.count("text count")?;
    let mut texts = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        let name = std::str::from_utf8(s.bytes()?).map_err(|_| s.malformed("text name"))?;
        texts.push(Box::from(name));
    }

    let mut cs = r.section()?;
    let os = r.section()?;
    let content_section = r.section()?;
    let content_offset = content_section.offset();
    let mut content_reader = content_section;
    let content_bytes = content_reader.take(content_reader.remaining())?;
    let utf8_error = |e: std::str::Utf8Error| Error::Malformed {
        offset: content_offset + e.valid_up_to(),
        what: "UTF-8 content",
    };
    // Version 4: the content is a compressed value (LZ4, or stored); 5:
    // one that names its codec.
    let content: Cow<'_, str> = if version >= 4 {
        let framing = if version >= 5 {
            Framing::Tagged
        } else {
            Framing::Implied(Codec::Lz4)
        };
        match unpack(content_bytes, "update content", framing)? {
            Cow::Borrowed(raw) => Cow::Borrowed(std::str::from_utf8(raw).map_err(utf8_error)?),
            Cow::Owned(raw) => {
                Cow::Owned(String::from_utf8(raw).map_err(|e| utf8_error(e.utf8_error()))?)
            }
        }
    } else {
        Cow::Borrowed(std::str::from_utf8(content_bytes).map_err(utf8_error)?)
    };
    let commits = if version >= 2 {
        super::commit_infos::read_infos(&mut r.section()?)?
    } else {
        Vec::new()
    };
    let mut map_names = Vec::new();
    let mut embeds = Vec::new();
    if version >= 3 {
        let mut s = r.section()?;
        let n = s.count("map count")?;
        for _ in 0..n {
            map_names.push(Box::<str>::from(read_string(&mut s)?));
        }
        if !s.is_empty() {
            return Err(s.malformed("trailing map names"));
        }
        let mut s = r.section()?;
        let table = read_object_table(&mut s)?;
        let n = s.count("embed count")?;
        for _ in 0..n {
            let p = s.varint()?;
            let peer = peer_at(&s, &peers, p)?;
            let counter = s.u32("embed counter")?;
            embeds.push((OpId::new(peer, counter), read_object_ref(&mut s, &table)?));
        }
        if !s.is_empty() {
            return Err(s.malformed("trailing embeds"));
        }
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing bytes"));
    }

    let n = cs.count("change count")?;
    let mut changes = Vec::with_capacity(bounded_capacity(n));
    let mut ops = RunReader {
        // Every run takes at least two bytes.
        runs: Vec::with_capacity(os.remaining() / 2),
        marks: Vec::new(),
        map_sets: Vec::new(),
        map_names: &map_names,
        version,
        os,
        peers: &peers,
        texts: texts.len(),
        content: &content,
        content_offset,
        content_at: 0,
        ascii: content.is_ascii(),
        text: 0,
        prev_insert: None,
        last_ref: None,
    };
    let mut next_counter: HashMap<PeerId, Counter> = HashMap::new();
    for _ in 0..n {
        let (peer, counter, len, deps) = read_change(&mut cs, &peers, &mut next_counter)?;
        // The change's ops.
        let first_run = ops.runs.len();
        let mut left = len;
        let mut op_counter = counter;
        while left > 0 {
            let run = ops.read_run(OpId::new(peer, op_counter), left)?;
            left -= run.len;
            op_counter += run.len;
            ops.runs.push(run);
        }
        changes.push(UpdateChange {
            peer,
            counter,
            len,
            deps,
            runs: first_run..ops.runs.len(),
        });
    }
    if !cs.is_empty() {
        return Err(cs.malformed("trailing change bytes"));
    }
    if !ops.os.is_empty() {
        return Err(ops.os.malformed("trailing op bytes"));
    }
    if ops.content_at != content.len() {
        return Err(Error::Malformed {
            offset: content_offset + ops.content_at,
            what: "unused content",
        });
    }
    let RunReader {
        runs,
        marks,
        map_sets,
        ..
    } = ops;
    Ok(Update {
        texts,
        changes,
        runs,
        content: content.into_owned(),
        marks,
        commits,
        map_sets,
        embeds,
    })
}

/// Reads one change header: its peer, first counter, length and deps.
fn read_change(
    cs: &mut Reader<'_>,
    peers: &[PeerId],
    next_counter: &mut HashMap<PeerId, Counter>,
) -> Result<(PeerId, Counter, u32, SmallVec<[OpId; 2]>)> {
    let p = cs.varint()?;
    let peer = peer_at(cs, peers, p)?;
    let c = cs.varint()?;
    let counter = if c == 0 {
        *next_counter
            .get(&peer)
            .ok_or_else(|| cs.malformed("change counter"))?
    } else {
        u32::try_from(c - 1).map_err(|_| cs.malformed("change counter"))?
    };
    let len = cs.u32("change length")?;
    let end = counter.checked_add(len);
    if len == 0 || end.is_none() {
        return Err(cs.malformed("change length"));
    }
    next_counter.insert(peer, counter + len);
    let header = cs.varint()?;
    let mut deps = SmallVec::new();
    if header & 1 == 1 {
        if counter == 0 {
            return Err(cs.malformed("dependency"));
        }
        deps.push(OpId::new(peer, counter - 1));
    }
    let explicit = usize::try_from(header >> 1)
        .ok()
        .filter(|&k| k <= cs.remaining())
        .ok_or_else(|| cs.malformed("dependency count"))?;
    for _ in 0..explicit {
        let p = cs.varint()?;
        let dep_peer = peer_at(cs, peers, p)?;
        deps.push(OpId::new(dep_peer, cs.u32("dependency counter")?));
    }
    Ok((peer, counter, len, deps))
}

/// Reads the op runs section, keeping what runs are written relative to.
struct RunReader<'a> {
    os: Reader<'a>,
    runs: Vec<UpdateRun>,
    marks: Vec<MarkSet>,
    map_sets: Vec<MapWrite>,
    /// The map names of a version 3 update (else empty).
    map_names: &'a [Box<str>],
    /// The update's format version.
    version: u8,
    peers: &'a [PeerId],
    /// Number of texts the update names.
    texts: usize,
    content: &'a str,
    /// Offset of the content section in the body (for errors).
    content_offset: usize,
    /// Bytes of content handed out so far.
    content_at: usize,
    ascii: bool,
    /// The text of the previous run.
    text: u32,
    /// The last insert: (its last id, its right origin, its text).
    prev_insert: Option<(OpId, Option<OpId>, u32)>,
    /// The id the next reference is written relative to.
    last_ref: Option<OpId>,
}

impl RunReader<'_> {
    /// Reads the next run, whose first op is `own`, of a change with
    /// `left` ops still to come.
    #[inline(always)]
    fn read_run(&mut self, own: OpId, left: u32) -> Result<UpdateRun> {
        let byte = self.os.u8()?;
        let kind = byte & 0b1111;
        let packed_len = u32::from(byte >> 4);
        let run_len = if packed_len > 0 {
            packed_len
        } else {
            self.os.u32("op length")?
        };
        if kind == KIND_MARK_START && packed_len == 0 && run_len == 0 {
            return self.read_extended(own, left);
        }
        if kind & FLAG_TEXT != 0 {
            self.text = self.os.u32("text index")?;
        }
        if self.text as usize >= self.texts {
            return Err(self.os.malformed("text index"));
        }
        if run_len == 0 || run_len > left {
            return Err(self.os.malformed("op length"));
        }
        let base = kind & 0b11;
        let mark_kind = kind & 0b111;
        let kind = if mark_kind == KIND_MARK_START || mark_kind == KIND_MARK_END {
            if run_len != 1 {
                return Err(self.os.malformed("mark op length"));
            }
            self.read_mark(own, mark_kind == KIND_MARK_START)?
        } else if base == KIND_INSERT || base == KIND_INSERT_CONTINUED {
            let continued = base == KIND_INSERT_CONTINUED;
            self.read_insert(own, run_len, continued, kind & FLAG_NO_CONTENT == 0)?
        } else {
            if kind & FLAG_NO_CONTENT != 0 {
                return Err(self.os.malformed("op kind"));
            }
            self.read_delete(own, run_len, base == KIND_DELETE_BACKWARDS)?
        };
        Ok(UpdateRun {
            len: run_len,
            text: self.text,
            kind,
        })
    }

    /// An op of a kind after the first four (see [`SUBKIND_MAP_SET`]):
    /// a map op, or a cancel run (first op `own`, at most `left` ops).
    /// Leaves the cursor where it was.
    #[cold]
    fn read_extended(&mut self, own: OpId, left: u32) -> Result<UpdateRun> {
        let os = &mut self.os;
        let sub = os.u8()?;
        if sub == SUBKIND_CANCEL && self.version >= 5 {
            let len = os.u32("op length")?;
            if len == 0 || len > left {
                return Err(os.malformed("op length"));
            }
            let text = os.u32("text index")?;
            if text as usize >= self.texts {
                return Err(os.malformed("text index"));
            }
            let target =
                read_id(os, self.peers, own)?.ok_or_else(|| os.malformed("cancel target"))?;
            self.prev_insert = None;
            return Ok(UpdateRun {
                len,
                text,
                kind: UpdateKind::Cancel { target },
            });
        }
        if sub != SUBKIND_MAP_SET {
            return Err(os.malformed("op kind"));
        }
        let map = usize::try_from(os.varint()?)
            .ok()
            .and_then(|i| self.map_names.get(i))
            .ok_or_else(|| os.malformed("map index"))?
            .clone();
        let key = read_string(os)?.into();
        let value = read_map_value(os)?;
        self.map_sets.push(MapWrite { map, key, value });
        self.prev_insert = None;
        Ok(UpdateRun {
            len: 1,
            text: 0,
            kind: UpdateKind::MapSet {
                set: (self.map_sets.len() - 1) as u32,
            },
        })
    }

    /// A mark's start (`start`) or end anchor, op `own`.
    fn read_mark(&mut self, own: OpId, start: bool) -> Result<UpdateKind> {
        let os = &mut self.os;
        let l = read_id(os, self.peers, self.last_ref.unwrap_or(own))?;
        let rgt = read_id(os, self.peers, l.unwrap_or(own))?;
        self.last_ref = Some(own);
        self.prev_insert = None;
        Ok(if start {
            let expand =
                ExpandType::from_byte(os.u8()?).ok_or_else(|| os.malformed("expand rule"))?;
            let key = read_string(os)?.into();
            let value = read_value(os, 0)?;
            self.marks.push(MarkSet { key, value });
            UpdateKind::MarkStart {
                left: l,
                right: rgt,
                mark: (self.marks.len() - 1) as u32,
                expand,
            }
        } else {
            let start = read_id(os, self.peers, own)?.ok_or_else(|| os.malformed("mark start"))?;
            UpdateKind::MarkEnd {
                left: l,
                right: rgt,
                start,
            }
        })
    }

    /// An insert run of `run_len` chars from op `own` on, continuing the
    /// previous insert run or with origins of its own, taking its text
    /// from the content unless the exporter left it out.
    #[inline(always)]
    fn read_insert(
        &mut self,
        own: OpId,
        run_len: u32,
        continued: bool,
        with_content: bool,
    ) -> Result<UpdateKind> {
        let (l, rgt) = if continued {
            match self.prev_insert {
                Some((last, right, t)) if t == self.text => (Some(last), right),
                _ => return Err(self.os.malformed("continued insert")),
            }
        } else {
            let l = read_id(&mut self.os, self.peers, self.last_ref.unwrap_or(own))?;
            (l, read_id(&mut self.os, self.peers, l.unwrap_or(own))?)
        };
        let last = OpId::new(own.peer, own.counter + run_len - 1);
        self.last_ref = Some(last);
        let content = if with_content {
            // Take `run_len` chars from the content.
            let rest = self.content.get(self.content_at..).unwrap_or("");
            // ASCII content has a byte per char.
            let bytes = if self.ascii {
                run_len as usize
            } else {
                crate::unit::prefix_units(rest.as_bytes(), run_len).0 as usize
            };
            let range = self.content_at..self.content_at + bytes;
            let short = bytes > rest.len();
            if short || (!self.ascii && char_len(rest.get(..bytes).unwrap_or("")) != run_len) {
                return Err(Error::Malformed {
                    offset: self.content_offset + self.content_at,
                    what: "content length",
                });
            }
            self.content_at += bytes;
            Some(range)
        } else {
            None
        };
        self.prev_insert = Some((last, rgt, self.text));
        Ok(UpdateKind::Insert {
            left: l,
            right: rgt,
            content,
        })
    }

    /// A delete run of `run_len` ops from `own` on, forwards or backwards.
    #[inline(always)]
    fn read_delete(&mut self, own: OpId, run_len: u32, reversed: bool) -> Result<UpdateKind> {
        let target = read_id(&mut self.os, self.peers, self.last_ref.unwrap_or(own))?
            .ok_or_else(|| self.os.malformed("delete target"))?;
        let last = if reversed {
            target.counter.checked_sub(run_len - 1)
        } else {
            target.counter.checked_add(run_len - 1)
        };
        let last = last.ok_or_else(|| self.os.malformed("delete target"))?;
        self.prev_insert = None;
        // The next delete is written relative to this run's last target
        // (where the cursor ended).
        self.last_ref = Some(OpId::new(target.peer, last));
        Ok(UpdateKind::Delete { target, reversed })
    }
}
