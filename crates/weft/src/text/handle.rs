//! [`Text`]: the handle through which callers read and edit one text.

use std::fmt;
use std::mem;
use std::ops::Range;

use crate::cursor::{Cursor, Side};
use crate::error::{Error, Result};
use crate::event::{DeltaBuf, Draft, Units};
use crate::id::{PeerId, Seq, TextIdx};
use crate::oplog::{OpKind, OpLog, OpRun};
use crate::style::{Attributes, Delta, ExpandType, StyleConfig};
use crate::unit::Unit;
use crate::value::Value;

use super::item::Item;
use super::view::check_range;
use super::{Need, TextRef, TextSource, TextState};
use crate::oplog::object::{check_attributes, Object, BLOCK_KEY_PREFIX, EMBED_CHAR};
use crate::unit::{char_len, utf16_len};

mod block_edits;

/// A named text of a [`crate::Doc`], borrowed for reading and editing.
///
/// Get one with [`crate::Doc::text`]; it borrows the document mutably, so
/// edits go straight to the document's state and history with no lock or
/// reference count on the way. Positions count chars (Unicode scalar
/// values) unless the method name says `_utf8` or `_utf16`.
///
/// Each edit becomes ops in the document's open change (see
/// [`crate::Doc::commit`]).
///
/// # Examples
///
/// ```
/// use weft::Doc;
///
/// let mut doc = Doc::new();
/// let mut text = doc.text("body");
/// text.insert(0, "Hello world")?;
/// text.splice(6, 5, "Weft")?;
/// text.delete(5, 1)?;
/// assert_eq!(text.to_string(), "HelloWeft");
/// assert_eq!(text.len(), 9);
/// assert_eq!(text.slice(5..9)?, "Weft");
/// # Ok::<(), weft::Error>(())
/// ```
pub struct Text<'a> {
    log: &'a mut OpLog,
    state: &'a mut TextState,
    /// The text's index in the document's text table.
    text: TextIdx,
    peer: PeerId,
    /// Reused buffer for the seqs a delete removes.
    deleted: &'a mut Vec<Range<Seq>>,
    config: &'a StyleConfig,
    /// What makes typing take the slow path, if anything: one check on the
    /// hot path (and a handle as small as without it).
    side: Option<SlowParts<'a>>,
}

/// The parts of a [`Text`] handle that only the slow path uses.
struct SlowParts<'a> {
    /// The document's lazily imported snapshot, if parts of it (the
    /// history, this text) are not loaded yet.
    lazy: Option<&'a mut dyn TextSource>,
    /// The open change's event draft, while someone subscribes to the
    /// document's events: each edit records its delta there.
    events: Option<&'a mut Draft>,
}

impl<'a> Text<'a> {
    #[inline]
    #[expect(
        clippy::too_many_arguments,
        reason = "the document's parts a handle borrows, each separately"
    )]
    pub(crate) fn new(
        log: &'a mut OpLog,
        state: &'a mut TextState,
        text: TextIdx,
        peer: PeerId,
        deleted: &'a mut Vec<Range<Seq>>,
        config: &'a StyleConfig,
        lazy: Option<&'a mut dyn TextSource>,
        events: Option<&'a mut Draft>,
    ) -> Self {
        Text {
            log,
            state,
            text,
            peer,
            deleted,
            config,
            side: (lazy.is_some() || events.is_some()).then_some(SlowParts { lazy, events }),
        }
    }

    /// The lazily imported snapshot, if any.
    fn lazy(&self) -> Option<&dyn TextSource> {
        self.side.as_ref().and_then(|s| s.lazy.as_deref())
    }

    /// Whether edits are recorded for events.
    fn recording(&self) -> bool {
        self.side.as_ref().is_some_and(|s| s.events.is_some())
    }

    /// Before an edit: loads the history and this text's tree if they
    /// still live in a lazily imported snapshot.
    #[inline(always)]
    fn ensure_loaded(&mut self, need: Need) -> Result<()> {
        if self.side.as_ref().is_some_and(|s| s.lazy.is_some()) {
            self.load(need)
        } else {
            Ok(())
        }
    }

    #[cold]
    #[inline(never)]
    fn load(&mut self, need: Need) -> Result<()> {
        match self.side.as_mut().and_then(|s| s.lazy.as_deref_mut()) {
            Some(lazy) => lazy.load_text(self.log, self.state, self.text, need),
            None => Ok(()),
        }
    }

    /// A read-only view of this text (see [`TextRef`]): what every read
    /// of this handle goes through.
    #[inline]
    pub fn view(&self) -> TextRef<'_> {
        TextRef::new(self.log, self.state, self.lazy())
    }

    /// The text's name in its document.
    pub fn name(&self) -> &str {
        crate::oplog::public_name(self.state.name())
    }

    /// Length in chars. O(1).
    #[inline]
    pub fn len(&self) -> usize {
        self.state.visible_len(Unit::Char) as usize
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Length in UTF-8 bytes. O(1).
    pub fn len_utf8(&self) -> usize {
        self.state.visible_len(Unit::Utf8) as usize
    }

    /// Length in UTF-16 code units. O(1).
    pub fn len_utf16(&self) -> usize {
        self.state.visible_len(Unit::Utf16) as usize
    }

    /// Length counted in `unit`. O(1).
    pub fn len_in(&self, unit: Unit) -> usize {
        self.state.visible_len(unit) as usize
    }

    /// Converts a position from one unit to another (see
    /// [`TextRef::convert_pos`]). O(log n).
    ///
    /// # Errors
    ///
    /// As [`TextRef::convert_pos`].
    pub fn convert_pos(&self, pos: usize, from: Unit, to: Unit) -> Result<usize> {
        self.view().convert_pos(pos, from, to)
    }

    /// A stable cursor at char position `pos` (see [`TextRef::cursor`]).
    /// O(log n).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] if `pos > len()`; after a lazy snapshot
    /// import, as [`crate::Doc::load`] (building this text's tree).
    pub fn cursor(&mut self, pos: usize, side: Side) -> Result<Cursor> {
        self.ensure_loaded(Need::Typing)?;
        self.view().cursor(pos, side)
    }

    /// [`Text::cursor`] at a UTF-16 position (a JavaScript offset).
    ///
    /// # Errors
    ///
    /// As [`Text::cursor`], and [`Error::NotCharBoundary`] inside a
    /// surrogate pair.
    pub fn cursor_utf16(&mut self, pos: usize, side: Side) -> Result<Cursor> {
        self.cursor_in(pos, Unit::Utf16, side)
    }

    /// [`Text::cursor`] at a position counted in `unit` (the same call as
    /// [`TextRef::cursor_in`]).
    ///
    /// # Errors
    ///
    /// As [`Text::cursor`], and [`Error::NotCharBoundary`] when `pos`
    /// falls inside a char.
    pub fn cursor_in(&mut self, pos: usize, unit: Unit, side: Side) -> Result<Cursor> {
        self.ensure_loaded(Need::Typing)?;
        self.view().cursor_in(pos, unit, side)
    }

    /// Inserts `s` at char position `pos`. O(log n), O(1) when typing right
    /// after the previous insert.
    ///
    /// The new text takes the styles of the marks around it by their
    /// expand rules (see [`crate::style`]). Typing where all the text of a
    /// mark was deleted does not bring that mark back: the text goes
    /// outside it, or, for a mark expanding both ways (which has no
    /// outside there), the insert also unmarks the new text for that key.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] if `pos > len()`; [`Error::HistoryFull`] or
    /// [`Error::CounterOverflow`] if the document has no ids left.
    // Typing is the hot path of every caller: inlining it (with the
    // state's insert) saves ~6% of the instructions of a B4 replay.
    #[inline(always)]
    pub fn insert(&mut self, pos: usize, s: &str) -> Result<()> {
        if self.side.is_some() {
            return self.insert_slow(pos, s);
        }
        self.insert_loaded(pos, s)?;
        if self.state.has_resurrected() {
            self.unmark_resurrected(pos, char_len(s) as usize)?;
        }
        Ok(())
    }

    /// [`Text::insert`] while a lazy snapshot is around or someone
    /// subscribes to events: loads first, records the change after.
    #[cold]
    #[inline(never)]
    fn insert_slow(&mut self, pos: usize, s: &str) -> Result<()> {
        self.ensure_loaded(Need::Typing)?;
        if self.insert_loaded(pos, s)? && self.recording() {
            self.record_inserted(pos, s, None);
        }
        if self.state.has_resurrected() {
            self.unmark_resurrected(pos, char_len(s) as usize)?;
        }
        Ok(())
    }

    /// Inserts an embed of `value` (an image, a mention: any [`Value`]) at
    /// char position `pos`: one position of the text, like a char, that
    /// holds the value. [`Text::to_delta`] shows it as a
    /// [`Delta::Embed`] (Quill's `{"insert": {"image": ...}}`),
    /// `to_string` as U+FFFC; it counts as one char, one UTF-16
    /// unit and 3 UTF-8 bytes (U+FFFC's). Marks style it and cursors name
    /// it as they do chars; deleting it is deleting that position.
    ///
    /// # Errors
    ///
    /// As [`Text::insert`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use weft::{Delta, Doc, Value};
    ///
    /// let mut doc = Doc::new();
    /// let mut text = doc.text("t");
    /// text.insert(0, "ab")?;
    /// let image = Value::Map(BTreeMap::from([("image".into(), "cat.png".into())]));
    /// text.insert_embed(1, image.clone())?;
    /// assert_eq!(text.to_string(), "a\u{FFFC}b");
    /// assert_eq!(text.len(), 3);
    /// assert_eq!(
    ///     text.to_delta(),
    ///     vec![Delta::insert("a"), Delta::embed(image), Delta::insert("b")]
    /// );
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn insert_embed(&mut self, pos: usize, value: impl Into<Value>) -> Result<()> {
        self.insert_object(pos, Object::Embed(value.into()))
    }

    /// Inserts `object` (an embed or a block marker) at char `pos`.
    fn insert_object(&mut self, pos: usize, object: Object) -> Result<()> {
        self.ensure_loaded(Need::Everything)?;
        match &object {
            Object::Embed(value) => value.check_depth(0)?,
            Object::Block(attributes) => check_attributes(attributes.iter(), 0)?,
        }
        let seq = self.log.next_seq();
        let mut buf = [0u8; 4];
        let s: &str = EMBED_CHAR.encode_utf8(&mut buf);
        if self.insert_loaded(pos, s)? {
            let recording = self.recording();
            let kept = recording.then(|| object.clone());
            self.log.set_object(seq, object);
            if let Some(object) = kept {
                self.record_inserted(pos, s, Some(&object));
            }
        }
        // Styles do not show on a block marker, but a mark over it has text
        // again: unmarked like any char, it does not come back through
        // typing next to the marker.
        if self.state.has_resurrected() {
            self.unmark_resurrected(pos, 1)?;
        }
        Ok(())
    }

    /// [`Text::insert`] into a loaded text, but for the unmarking of
    /// resurrected marks. Returns whether it inserted anything.
    #[inline(always)]
    fn insert_loaded(&mut self, pos: usize, s: &str) -> Result<bool> {
        debug_assert!(
            !self.state.has_resurrected(),
            "an earlier insert left marks to unmark"
        );
        // Loaded: the tree's count is the length.
        let len = self.state.len(Unit::Char) as usize;
        if pos > len {
            return Err(Error::OutOfBounds {
                pos,
                len,
                unit: Unit::Char,
            });
        }
        if s.is_empty() {
            // A no-op, but still an edit: refused while checked out.
            self.log.check_writable()?;
            return Ok(false);
        }
        let byte_start = self.log.content().len();
        let total_bytes = byte_start.checked_add(s.len());
        if total_bytes.is_none_or(|t| t >= u32::MAX as usize) || len + s.len() >= u32::MAX as usize
        {
            return Err(Error::HistoryFull);
        }
        let n = char_len(s);
        let seq = self.log.reserve_local(self.peer, n)?;
        self.log.push_content(s);
        let item = Item {
            seq,
            len: n,
            origin_left: 0,
            origin_right: 0,
            byte_start: byte_start as u32,
            bytes: s.len() as u32,
            utf16: utf16_len(s),
            deleted: false,
            anchor: 0,
        };
        let (origin_left, origin_right) =
            self.state
                .local_insert(pos as u32, item, self.log.content());
        self.log.push_insert(
            self.text,
            seq,
            n,
            origin_left,
            origin_right,
            item.byte_start,
            item.bytes,
        );
        Ok(true)
    }

    /// After typing where a mark's text was all deleted and no place
    /// avoids the mark (it expands both ways): unmarks the new text so the
    /// mark does not come back.
    #[cold]
    #[inline(never)]
    fn unmark_resurrected(&mut self, pos: usize, n: usize) -> Result<()> {
        for key in self.state.take_resurrected(pos as u32, self.log.marks()) {
            let key = self.log.keys().name(key).to_owned();
            self.mark_value(pos..pos + n, &key, Value::Null)?;
        }
        Ok(())
    }

    /// Deletes `len` chars starting at char position `pos`. O(log n + k)
    /// for k runs touched.
    ///
    /// # Errors
    ///
    /// [`Error::RangeOutOfBounds`] if `pos + len > len()` (naming the
    /// range `pos..pos + len`); [`Error::HistoryFull`] or [`Error::CounterOverflow`] if the
    /// document has no ids left.
    // See `insert`: the same for deleting (~3%).
    #[inline(always)]
    pub fn delete(&mut self, pos: usize, len: usize) -> Result<()> {
        if self.side.is_some() {
            return self.delete_slow(pos, len);
        }
        self.delete_loaded::<false>(pos, len)
    }

    /// [`Text::delete`] while a lazy snapshot is around or someone
    /// subscribes to events.
    #[cold]
    #[inline(never)]
    fn delete_slow(&mut self, pos: usize, len: usize) -> Result<()> {
        self.ensure_loaded(Need::Typing)?;
        self.delete_loaded::<true>(pos, len)
    }

    /// [`Text::delete`] in a loaded text; `RECORD`: in the event draft too,
    /// if there is one.
    #[inline(always)]
    fn delete_loaded<const RECORD: bool>(&mut self, pos: usize, len: usize) -> Result<()> {
        let total = self.state.len(Unit::Char) as usize;
        let end = pos.saturating_add(len);
        if end > total {
            return Err(Error::RangeOutOfBounds {
                start: pos,
                end,
                len: total,
                unit: Unit::Char,
            });
        }
        if len == 0 {
            self.log.check_writable()?;
            return Ok(());
        }
        let mut seq = self.log.reserve_local(self.peer, len as u32)?;
        if RECORD && self.recording() {
            self.record_delete(pos, len);
        }
        let mut deleted = mem::take(self.deleted);
        deleted.clear();
        self.state
            .local_delete(pos as u32, len as u32, self.log.content(), &mut deleted);
        for range in deleted.drain(..) {
            let n = range.end - range.start;
            self.log.push_op(OpRun {
                seq,
                len: n,
                text: self.text,
                kind: OpKind::Delete {
                    target: range.start,
                    reversed: false,
                },
            });
            seq += n;
        }
        *self.deleted = deleted;
        Ok(())
    }

    /// Deletes `del` chars at `pos`, then inserts `s` there.
    ///
    /// # Errors
    ///
    /// As [`Text::delete`] and [`Text::insert`]. Atomic: room for both
    /// steps is checked first, so nothing changes on error.
    pub fn splice(&mut self, pos: usize, del: usize, s: &str) -> Result<()> {
        if pos.checked_add(del).is_none_or(|end| end > self.len()) {
            return self.delete(pos, del);
        }
        self.ensure_loaded(Need::Typing)?;
        let ops = del as u64 + u64::from(char_len(s)) + self.unmark_bound();
        self.log.check_room(self.peer, ops, s.len() as u64)?;
        self.delete(pos, del)?;
        self.insert(pos, s)
    }

    /// `pos` (chars) in `unit`.
    fn pos_in(&self, pos: usize, unit: Unit) -> usize {
        if unit == Unit::Char {
            return pos;
        }
        let converted = self
            .state
            .convert(pos, Unit::Char, unit, self.log.content());
        debug_assert!(converted.is_ok(), "recorded positions are in bounds");
        converted.unwrap_or(pos)
    }

    /// Chars `range` counted in each unit the event draft keeps, by
    /// [`Unit::index`] (others are left empty).
    fn range_in_units(&self, range: Range<usize>) -> [Range<usize>; 3] {
        if self.units_kept() == Units::CHAR {
            return [range, 0..0, 0..0];
        }
        let mut at = [0..0, 0..0, 0..0];
        for unit in self.units() {
            at[unit.index()] = self.pos_in(range.start, unit)..self.pos_in(range.end, unit);
        }
        at
    }

    /// Records in the event draft that `s` was inserted at `pos` (after
    /// the insert: the new text's styles are known).
    #[cold]
    #[inline(never)]
    fn record_inserted(&mut self, pos: usize, s: &str, object: Option<&Object>) {
        if object.is_none() && self.state.anchors.is_empty() {
            // No marks, so no styles: a plain insert.
            if self.record_plain_chars(pos..pos, Some(s)) {
                return;
            }
            let at = self.range_in_units(pos..pos);
            if let Some(draft) = self.side.as_mut().and_then(|s| s.events.as_deref_mut()) {
                draft.record_plain(self.text, at, Some(s));
            }
            return;
        }
        let attributes = if self.state.anchors.is_empty() {
            Attributes::new()
        } else {
            self.view().attributes_at(pos).unwrap_or_default()
        };
        let at = self.range_in_units(pos..pos);
        self.record_with(|unit, buf| {
            buf.retain(at[unit.index()].start);
            match object {
                Some(Object::Embed(v)) => buf.push(Delta::Embed {
                    insert: v.clone(),
                    attributes: attributes.clone(),
                }),
                // A new marker has no block marks yet.
                Some(Object::Block(base)) => buf.push(Delta::Block {
                    attributes: Attributes::clone(base),
                }),
                None => buf.insert(s, &attributes),
            }
        });
    }

    /// Records that `len` chars at `pos` are deleted (before they are).
    #[cold]
    #[inline(never)]
    fn record_delete(&mut self, pos: usize, len: usize) {
        if self.record_plain_chars(pos..pos + len, None) {
            return;
        }
        let at = self.range_in_units(pos..pos + len);
        if let Some(draft) = self.side.as_mut().and_then(|s| s.events.as_deref_mut()) {
            draft.record_plain(self.text, at, None);
        }
    }

    /// Records a plain edit (see [`Draft::record_plain`]) of chars `at`
    /// if the draft keeps chars only (the subscriber of
    /// [`crate::Doc::subscribe`] alone, the common case): no units to
    /// convert to. Returns whether it did.
    #[inline]
    fn record_plain_chars(&mut self, at: Range<usize>, inserted: Option<&str>) -> bool {
        let text = self.text;
        match self.side.as_mut().and_then(|s| s.events.as_deref_mut()) {
            Some(draft) if draft.units() == Units::CHAR => {
                draft.record_plain(text, [at, 0..0, 0..0], inserted);
                true
            }
            _ => false,
        }
    }

    /// Records that `key` is set to `value` over `range` (a local mark
    /// wins everywhere in its range: it is the newest).
    #[cold]
    #[inline(never)]
    fn record_mark(&mut self, range: Range<usize>, key: &str, value: &Value, block: bool) {
        // Where the key shows: an inline style on chars and embeds but not
        // on block markers, a block attribute (`block`: `update_block`,
        // whose range is one marker) on markers only.
        let pieces: Vec<(Range<usize>, bool)> = if !block && !self.log.objects().is_empty() {
            let pieces = self.view().marker_pieces(range.clone()).unwrap_or_default();
            pieces.into_iter().map(|(r, marker)| (r, !marker)).collect()
        } else {
            vec![(range.clone(), true)]
        };
        let at: Vec<([Range<usize>; 3], bool)> = pieces
            .iter()
            .map(|(r, shows)| (self.range_in_units(r.clone()), *shows))
            .collect();
        self.record(|unit| {
            let u = unit.index();
            let mut change = vec![Delta::retain(at.first().map_or(0, |p| p.0[u].start))];
            for (r, shows) in &at {
                change.push(if *shows {
                    Delta::retain_with(r[u].len(), [(key, value.clone())])
                } else {
                    Delta::retain(r[u].len())
                });
            }
            change
        });
    }

    /// The units the event draft keeps.
    #[inline]
    fn units(&self) -> impl Iterator<Item = Unit> {
        self.units_kept().iter()
    }

    /// The set of units the event draft keeps.
    #[inline]
    fn units_kept(&self) -> Units {
        self.side
            .as_ref()
            .and_then(|s| s.events.as_ref())
            .map(|d| d.units())
            .unwrap_or_default()
    }

    fn record(&mut self, change: impl FnMut(Unit) -> Vec<Delta>) {
        if let Some(draft) = self.side.as_mut().and_then(|s| s.events.as_deref_mut()) {
            draft.add(self.text, change);
        }
    }

    /// [`Self::record`] writing into the draft's buffers (see
    /// [`Draft::record`]): for typing, the edit recorded most often.
    fn record_with(&mut self, change: impl FnMut(Unit, &mut DeltaBuf<'_>)) {
        if let Some(draft) = self.side.as_mut().and_then(|s| s.events.as_deref_mut()) {
            draft.record(self.text, change);
        }
    }

    /// Most ops the unmarks of one insert can add (see
    /// [`Text::unmark_resurrected`]): two per style key.
    fn unmark_bound(&self) -> u64 {
        2 * self.log.keys().len() as u64
    }

    fn to_chars(&self, pos: usize, unit: Unit) -> Result<usize> {
        self.convert_pos(pos, unit, Unit::Char)
    }

    /// Inserts `s` at UTF-8 byte offset `pos`.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end, [`Error::NotCharBoundary`] inside
    /// a char, and as [`Text::insert`].
    pub fn insert_utf8(&mut self, pos: usize, s: &str) -> Result<()> {
        let pos = self.to_chars(pos, Unit::Utf8)?;
        self.insert(pos, s)
    }

    /// Deletes the UTF-8 byte range `pos..pos + len`.
    ///
    /// # Errors
    ///
    /// [`Error::RangeOutOfBounds`] past the end (in UTF-8 bytes),
    /// [`Error::NotCharBoundary`] if an end of the range is inside a char,
    /// and as [`Text::delete`].
    pub fn delete_utf8(&mut self, pos: usize, len: usize) -> Result<()> {
        let end = pos.saturating_add(len);
        check_range(
            &(pos..end),
            self.state.visible_len(Unit::Utf8) as usize,
            Unit::Utf8,
        )?;
        let start = self.to_chars(pos, Unit::Utf8)?;
        let end = self.to_chars(end, Unit::Utf8)?;
        self.delete(start, end.saturating_sub(start))
    }

    /// Inserts `s` at UTF-16 offset `pos` (a JavaScript string index).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the end, [`Error::NotCharBoundary`] inside
    /// a surrogate pair, and as [`Text::insert`].
    pub fn insert_utf16(&mut self, pos: usize, s: &str) -> Result<()> {
        let pos = self.to_chars(pos, Unit::Utf16)?;
        self.insert(pos, s)
    }

    /// Deletes the UTF-16 range `pos..pos + len`.
    ///
    /// # Errors
    ///
    /// [`Error::RangeOutOfBounds`] past the end (in UTF-16 code units),
    /// [`Error::NotCharBoundary`] if an end of the range is inside a
    /// surrogate pair, and as [`Text::delete`].
    pub fn delete_utf16(&mut self, pos: usize, len: usize) -> Result<()> {
        let end = pos.saturating_add(len);
        check_range(
            &(pos..end),
            self.state.visible_len(Unit::Utf16) as usize,
            Unit::Utf16,
        )?;
        let start = self.to_chars(pos, Unit::Utf16)?;
        let end = self.to_chars(end, Unit::Utf16)?;
        self.delete(start, end.saturating_sub(start))
    }

    /// The text in char range `range` (see [`TextRef::slice`]).
    ///
    /// # Errors
    ///
    /// As [`TextRef::slice`].
    pub fn slice(&self, range: Range<usize>) -> Result<String> {
        self.view().slice(range)
    }
}

/// Rich text: marks and deltas.
impl Text<'_> {
    /// Gives chars `range` the style `key` = `value` (e.g. `"bold"`,
    /// `true`). The mark expands by the rule the document's
    /// [`StyleConfig`] has for `key` (see [`crate::Doc::config_text_style`]
    /// and [`crate::style`]); a `Null` value is [`Text::unmark`]. Marks
    /// are ops: they sync and merge like edits, and on one key the last
    /// mark made wins. Marking a range that already has exactly this value
    /// everywhere creates no op. O(log n + length of the range).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] if `range` is empty or reversed,
    /// [`Error::RangeOutOfBounds`] if it ends past the end; as [`Text::insert`]
    /// when the document has no ids left.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Delta, Doc};
    ///
    /// let mut doc = Doc::new();
    /// let mut text = doc.text("body");
    /// text.insert(0, "Hello world")?;
    /// text.mark(0..5, "bold", true)?;
    /// text.insert(5, "!")?; // bold expands after: the "!" is bold
    /// text.mark(7..12, "link", "https://example.com")?;
    /// assert_eq!(
    ///     text.to_delta(),
    ///     vec![
    ///         Delta::insert_with("Hello!", [("bold", true)]),
    ///         Delta::insert(" "),
    ///         Delta::insert_with("world", [("link", "https://example.com")]),
    ///     ]
    /// );
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn mark(&mut self, range: Range<usize>, key: &str, value: impl Into<Value>) -> Result<()> {
        self.mark_value(range, key, value.into())
    }

    /// Removes style `key` from chars `range`: a mark with a `Null` value,
    /// so its edges behave like the edges of two separate marks. Creates no
    /// op when no char in the range has `key`.
    ///
    /// # Errors
    ///
    /// As [`Text::mark`].
    pub fn unmark(&mut self, range: Range<usize>, key: &str) -> Result<()> {
        self.mark_value(range, key, Value::Null)
    }

    /// [`Text::mark`] with a UTF-8 byte range.
    ///
    /// # Errors
    ///
    /// As [`Text::mark`], and [`Error::NotCharBoundary`] when an end falls
    /// inside a char.
    pub fn mark_utf8(
        &mut self,
        range: Range<usize>,
        key: &str,
        value: impl Into<Value>,
    ) -> Result<()> {
        let range = self.range_to_chars(range, Unit::Utf8)?;
        self.mark_value(range, key, value.into())
    }

    /// [`Text::mark`] with a UTF-16 range.
    ///
    /// # Errors
    ///
    /// As [`Text::mark`], and [`Error::NotCharBoundary`] when an end falls
    /// inside a surrogate pair.
    pub fn mark_utf16(
        &mut self,
        range: Range<usize>,
        key: &str,
        value: impl Into<Value>,
    ) -> Result<()> {
        let range = self.range_to_chars(range, Unit::Utf16)?;
        self.mark_value(range, key, value.into())
    }

    /// [`Text::unmark`] with a UTF-8 byte range.
    ///
    /// # Errors
    ///
    /// As [`Text::mark_utf8`].
    pub fn unmark_utf8(&mut self, range: Range<usize>, key: &str) -> Result<()> {
        let range = self.range_to_chars(range, Unit::Utf8)?;
        self.mark_value(range, key, Value::Null)
    }

    /// [`Text::unmark`] with a UTF-16 range.
    ///
    /// # Errors
    ///
    /// As [`Text::mark_utf16`].
    pub fn unmark_utf16(&mut self, range: Range<usize>, key: &str) -> Result<()> {
        let range = self.range_to_chars(range, Unit::Utf16)?;
        self.mark_value(range, key, Value::Null)
    }

    /// Checks a range in `unit` and converts it to chars.
    fn range_to_chars(&self, range: Range<usize>, unit: Unit) -> Result<Range<usize>> {
        if range.start >= range.end {
            return Err(Error::InvalidRange {
                start: range.start,
                end: range.end,
                unit,
            });
        }
        check_range(&range, self.state.visible_len(unit) as usize, unit)?;
        let end = self.to_chars(range.end, unit)?;
        let start = self.to_chars(range.start, unit)?;
        Ok(start..end)
    }

    fn mark_value(&mut self, range: Range<usize>, key: &str, value: Value) -> Result<()> {
        self.ensure_loaded(Need::Everything)?;
        let len = self.len();
        if range.start >= range.end {
            return Err(Error::InvalidRange {
                start: range.start,
                end: range.end,
                unit: Unit::Char,
            });
        }
        check_range(&range, len, Unit::Char)?;
        if key.starts_with(BLOCK_KEY_PREFIX) {
            return Err(Error::ReservedKey(key.to_owned()));
        }
        value.check_depth(0)?;
        // Redundant: every char already has exactly this (or, for an
        // unmark, none has the key).
        if self.state.has_everywhere(
            range.start as u32..range.end as u32,
            key,
            &value,
            self.log.marks(),
            self.log.keys(),
        ) {
            self.log.check_writable()?;
            return Ok(());
        }
        let expand = self.config.get(key);
        self.mark_op(range, (key, key), value, expand)
    }

    /// Marks chars `range` (checked) with `key` = `value` under `expand`;
    /// events show the key as `shown`.
    fn mark_op(
        &mut self,
        range: Range<usize>,
        (key, shown): (&str, &str),
        value: Value,
        expand: ExpandType,
    ) -> Result<()> {
        let seq = self.log.reserve_local(self.peer, 2)?;
        if self.recording() {
            self.record_mark(range.clone(), shown, &value, key != shown);
        }
        let mark = self.log.start_mark(key, value, expand, seq);
        self.log.end_mark(mark, seq + 1);
        let [(l0, r0), (l1, r1)] = self.state.local_mark(
            range.start as u32..range.end as u32,
            seq,
            mark,
            expand,
            self.log.content(),
        );
        self.log.push_op(OpRun {
            seq,
            len: 1,
            text: self.text,
            kind: OpKind::MarkStart {
                origin_left: l0,
                origin_right: r0,
                mark,
            },
        });
        self.log.push_op(OpRun {
            seq: seq + 1,
            len: 1,
            text: self.text,
            kind: OpKind::MarkEnd {
                origin_left: l1,
                origin_right: r1,
                mark,
            },
        });
        Ok(())
    }

    /// The styles of the char at `pos` (see [`TextRef::attributes_at`]).
    ///
    /// # Errors
    ///
    /// As [`TextRef::attributes_at`].
    pub fn attributes_at(&self, pos: usize) -> Result<Attributes> {
        self.view().attributes_at(pos)
    }

    /// The whole text as Quill-style runs (see [`TextRef::to_delta`]).
    /// O(n).
    pub fn to_delta(&self) -> Vec<Delta> {
        self.view().to_delta()
    }

    /// Chars `range` as Quill-style runs (see [`TextRef::slice_delta`]).
    ///
    /// # Errors
    ///
    /// As [`TextRef::slice_delta`].
    pub fn slice_delta(&self, range: Range<usize>) -> Result<Vec<Delta>> {
        self.view().slice_delta(range)
    }

    /// [`Text::apply_delta`] with retains and deletes counted in UTF-16
    /// units (Quill's and every JavaScript editor's unit). Atomic.
    ///
    /// # Errors
    ///
    /// As [`Text::apply_delta`], and [`Error::NotCharBoundary`] if a retain
    /// or delete ends inside a surrogate pair.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Delta, Doc};
    ///
    /// let mut doc = Doc::new();
    /// let mut text = doc.text("t");
    /// text.insert(0, "😀 ok")?;
    /// // "😀" is two UTF-16 units.
    /// text.apply_delta_utf16(&[Delta::retain(3), Delta::delete(2), Delta::insert("fine")])?;
    /// assert_eq!(text.to_string(), "😀 fine");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn apply_delta_utf16(&mut self, delta: &[Delta]) -> Result<()> {
        self.apply_delta_in(delta, Unit::Utf16)
    }

    /// [`Text::apply_delta`] with retains and deletes counted in `unit`.
    ///
    /// # Errors
    ///
    /// As [`Text::apply_delta_utf16`].
    pub fn apply_delta_in(&mut self, delta: &[Delta], unit: Unit) -> Result<()> {
        if unit == Unit::Char {
            return self.apply_delta(delta);
        }
        self.ensure_loaded(Need::Everything)?;
        let chars = self.view().delta_to_chars(delta, unit)?;
        self.apply_delta(&chars)
    }

    /// Chars `range`, counted in UTF-16 units, as Quill-style runs (see
    /// [`TextRef::slice_delta_in`]).
    ///
    /// # Errors
    ///
    /// As [`TextRef::slice_delta_in`].
    pub fn slice_delta_utf16(&self, range: Range<usize>) -> Result<Vec<Delta>> {
        self.view().slice_delta_in(range, Unit::Utf16)
    }

    /// Chars `range`, counted in `unit`, as Quill-style runs (see
    /// [`TextRef::slice_delta_in`]).
    ///
    /// # Errors
    ///
    /// As [`TextRef::slice_delta_in`].
    pub fn slice_delta_in(&self, range: Range<usize>, unit: Unit) -> Result<Vec<Delta>> {
        self.view().slice_delta_in(range, unit)
    }
}

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.view(), f)
    }
}

impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Text")
            .field("name", &self.name())
            .field("len", &self.len())
            .finish()
    }
}
