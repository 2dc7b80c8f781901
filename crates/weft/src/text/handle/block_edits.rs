//! Block markers through a [`Text`] handle (`split_block`, `update_block`,
//! `join_block`) and [`Text::apply_delta`], which maps Quill's line
//! formats onto them.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::oplog::object::{block_key, check_attributes, Object, EMBED_CHAR};
use crate::style::{attrs, Attributes, Delta, ExpandType};
use crate::text::view::check_range;
use crate::text::Need;
use crate::unit::char_len;
use crate::unit::Unit;
use crate::value::Value;

use super::Text;

impl Text<'_> {
    /// Inserts a block marker at char `pos`: the text before it (back to
    /// the previous marker, or the start) becomes a block with
    /// `attributes` (e.g. `{"header": 2}`, `{"list": "bullet", "indent":
    /// 1}`), ended by the marker, as Quill's `"\n"` ends a line and
    /// carries its format. The marker takes one position: one char, one
    /// UTF-16 unit and the 3 UTF-8 bytes of U+FFFC, the char
    /// `to_string` shows for it. Deltas show it as a
    /// [`Delta::Block`]; [`crate::TextRef::blocks`] reads the blocks.
    ///
    /// Text typed at the marker's place concurrently stays before it (in
    /// the block the marker ends), whatever the peer ids. `Null` values
    /// are left out.
    ///
    /// # Errors
    ///
    /// As [`Text::insert`].
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Delta, Doc};
    ///
    /// let mut doc = Doc::new();
    /// let mut text = doc.text("t");
    /// text.insert(0, "Weft\nA CRDT")?;
    /// text.delete(4, 1)?;
    /// text.split_block(4, [("header", 1)])?;
    /// text.update_block(4, [("align", "center")])?;
    /// assert_eq!(
    ///     text.to_delta(),
    ///     vec![
    ///         Delta::insert("Weft"),
    ///         Delta::block([("align", weft::Value::from("center")), ("header", 1.into())]),
    ///         Delta::insert("A CRDT"),
    ///     ]
    /// );
    /// assert_eq!(text.to_string(), "Weft\u{FFFC}A CRDT");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn split_block<K: Into<String>, V: Into<Value>>(
        &mut self,
        pos: usize,
        attributes: impl IntoIterator<Item = (K, V)>,
    ) -> Result<()> {
        let mut attributes = attrs(attributes);
        attributes.retain(|_, v| !v.is_null());
        self.insert_object(pos, Object::Block(std::sync::Arc::new(attributes)))
    }

    /// Sets the given attributes of the block marker at char `pos` (`Null`
    /// removes a key); other keys stay. Per key the last writer wins, by
    /// (Lamport, peer), as for marks and map keys; values it already has
    /// make no op.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] if `pos >= len()`, [`Error::NotABlock`] if
    /// the char at `pos` is not a block marker; [`Error::Detached`] while
    /// checked out; [`Error::HistoryFull`] when the document runs out of
    /// ids.
    pub fn update_block<K: Into<String>, V: Into<Value>>(
        &mut self,
        pos: usize,
        attributes: impl IntoIterator<Item = (K, V)>,
    ) -> Result<()> {
        self.ensure_loaded(Need::Everything)?;
        let current = self.view().block_at(pos)?.ok_or(Error::NotABlock { pos })?;
        let attributes = attrs(attributes);
        check_attributes(&attributes, 0)?;
        let changes: Vec<(String, Value)> = attributes
            .into_iter()
            .filter(|(k, v)| match current.get(k) {
                Some(old) => old != v,
                None => !v.is_null(),
            })
            .collect();
        self.log.check_writable()?;
        self.log
            .check_room(self.peer, 2 * changes.len() as u64, 0)?;
        for (key, value) in changes {
            self.mark_op(
                pos..pos + 1,
                (&block_key(&key), &key),
                value,
                ExpandType::None,
            )?;
        }
        Ok(())
    }

    /// Deletes the block marker at char `pos`, joining its block with the
    /// next one (which keeps its own attributes).
    ///
    /// # Errors
    ///
    /// As [`Text::update_block`].
    pub fn join_block(&mut self, pos: usize) -> Result<()> {
        self.ensure_loaded(Need::Everything)?;
        if self.view().block_at(pos)?.is_none() {
            return Err(Error::NotABlock { pos });
        }
        self.delete(pos, 1)
    }

    /// The attributes of the block marker at char `pos` (see
    /// [`crate::TextRef::block_at`]).
    ///
    /// # Errors
    ///
    /// As [`crate::TextRef::block_at`].
    pub fn block_at(&self, pos: usize) -> Result<Option<Attributes>> {
        self.view().block_at(pos)
    }

    /// The text as blocks (see [`crate::TextRef::blocks`]). O(n).
    pub fn blocks(&self) -> Vec<crate::Block> {
        self.view().blocks()
    }

    /// Sets `attributes` on chars `range` the way a delta's retain does:
    /// block markers take them as block attributes, other chars as
    /// styles.
    fn retain_attributes(&mut self, range: Range<usize>, attributes: &Attributes) -> Result<()> {
        if self.log.objects().is_empty() {
            for (key, value) in attributes {
                self.mark_value(range.clone(), key, value.clone())?;
            }
            return Ok(());
        }
        for (piece, markers) in self.view().marker_pieces(range)? {
            if markers {
                for pos in piece {
                    self.update_block(pos, attributes.clone())?;
                }
            } else {
                for (key, value) in attributes {
                    self.mark_value(piece.clone(), key, value.clone())?;
                }
            }
        }
        Ok(())
    }

    /// Applies a Quill-style delta (positions in chars): retains move on
    /// (setting the attributes they carry, `Null` removing a key: on a
    /// block marker they are its block attributes, as Quill's line formats
    /// on a `"\n"`), inserts add text with exactly their attributes
    /// (styles it would inherit and does not list are removed from it), a
    /// [`Delta::Block`] inserts a block marker (see [`Text::split_block`]),
    /// deletes remove chars.
    ///
    /// Atomic: the delta is checked against the text's length, and the
    /// history for room for every op it may make (counting, for each
    /// insert, an unmark of every style key), before anything changes;
    /// on error nothing has.
    ///
    /// # Errors
    ///
    /// [`Error::RangeOutOfBounds`] if a retain or delete goes past the end
    /// of the text as the delta's earlier steps leave it; as
    /// [`Text::insert`] when the document runs out of ids.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Delta, Doc};
    ///
    /// let mut doc = Doc::new();
    /// let mut text = doc.text("body");
    /// text.apply_delta(&[Delta::insert_with("Hi", [("bold", true)]), Delta::insert(" you")])?;
    /// text.apply_delta(&[Delta::retain(3), Delta::retain_with(3, [("italic", true)])])?;
    /// assert_eq!(
    ///     text.to_delta(),
    ///     vec![
    ///         Delta::insert_with("Hi", [("bold", true)]),
    ///         Delta::insert(" "),
    ///         Delta::insert_with("you", [("italic", true)]),
    ///     ]
    /// );
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn apply_delta(&mut self, delta: &[Delta]) -> Result<()> {
        // Check that it fits before changing anything: positions, and room
        // for every op it can make (a bound: inserts may unmark inherited
        // keys, at most one mark per key).
        self.ensure_loaded(Need::Everything)?;
        for d in delta {
            match d {
                Delta::Insert { attributes, .. } | Delta::Retain { attributes, .. } => {
                    check_attributes(attributes, 0)?
                }
                Delta::Embed { insert, attributes } => {
                    insert.check_depth(0)?;
                    check_attributes(attributes, 0)?;
                }
                Delta::Block { attributes } => check_attributes(attributes, 0)?,
                Delta::Delete { .. } => {}
            }
        }
        let keys = self.log.keys().len() as u64
            + delta
                .iter()
                .map(|d| match d {
                    Delta::Insert { attributes, .. }
                    | Delta::Embed { attributes, .. }
                    | Delta::Block { attributes }
                    | Delta::Retain { attributes, .. } => attributes.len() as u64,
                    Delta::Delete { .. } => 0,
                })
                .sum::<u64>();
        let (mut ops, mut bytes) = (0u64, 0u64);
        let (mut pos, mut len) = (0usize, self.len());
        for d in delta {
            match d {
                Delta::Retain { retain, attributes } => {
                    // Markers split a retain into pieces.
                    let pieces = if self.log.objects().is_empty() {
                        1
                    } else {
                        *retain as u64
                    };
                    ops = ops.saturating_add((2 * attributes.len() as u64).saturating_mul(pieces));
                }
                Delta::Delete { delete } => ops = ops.saturating_add(*delete as u64),
                Delta::Insert { insert, .. } => {
                    ops = ops.saturating_add(u64::from(char_len(insert)) + 4 * keys);
                    bytes = bytes.saturating_add(insert.len() as u64);
                }
                Delta::Embed { .. } | Delta::Block { .. } => {
                    ops = ops.saturating_add(1 + 4 * keys);
                    bytes += EMBED_CHAR.len_utf8() as u64;
                }
            }
            match d {
                Delta::Retain { retain: n, .. } | Delta::Delete { delete: n } => {
                    let end = pos.saturating_add(*n);
                    check_range(&(pos..end), len, Unit::Char)?;
                    if matches!(d, Delta::Retain { .. }) {
                        pos = end;
                    } else {
                        len -= n;
                    }
                }
                Delta::Insert { insert, .. } => {
                    let n = char_len(insert) as usize;
                    pos += n;
                    len += n;
                }
                Delta::Embed { .. } | Delta::Block { .. } => {
                    pos += 1;
                    len += 1;
                }
            }
        }
        self.log.check_room(self.peer, ops, bytes)?;
        let mut pos = 0usize;
        for d in delta {
            match d {
                Delta::Retain { retain, attributes } => {
                    let range = pos..pos + retain;
                    if !range.is_empty() && !attributes.is_empty() {
                        self.retain_attributes(range.clone(), attributes)?;
                    }
                    pos = range.end;
                }
                Delta::Delete { delete } => self.delete(pos, *delete)?,
                Delta::Block { attributes } => {
                    self.split_block(pos, attributes.clone())?;
                    pos += 1;
                }
                Delta::Insert { .. } | Delta::Embed { .. } => {
                    let (n, attributes) = match d {
                        Delta::Insert { insert, attributes } => {
                            let n = char_len(insert) as usize;
                            if n == 0 {
                                continue;
                            }
                            self.insert(pos, insert)?;
                            (n, attributes)
                        }
                        Delta::Embed { insert, attributes } => {
                            self.insert_embed(pos, insert.clone())?;
                            (1, attributes)
                        }
                        _ => continue,
                    };
                    let range = pos..pos + n;
                    let inherited = self.attributes_at(pos)?;
                    for key in inherited.keys() {
                        if attributes.get(key).is_none_or(Value::is_null) {
                            self.mark_value(range.clone(), key, Value::Null)?;
                        }
                    }
                    for (key, value) in attributes {
                        if !value.is_null() && inherited.get(key) != Some(value) {
                            self.mark_value(range.clone(), key, value.clone())?;
                        }
                    }
                    pos = range.end;
                }
            }
        }
        Ok(())
    }
}
