//! Objects in a text: inserts of one U+FFFC char that are an embed (a
//! value: an image, a mention) or a block marker (the end of a block, with
//! its attributes).
//!
//! A block marker's attributes are the ones its insert carried, then per
//! key the block marks on it: marks whose key is the attribute's name
//! after [`BLOCK_KEY_PREFIX`], which [`crate::Text::update_block`] makes
//! over the marker alone and never expanding. Such a mark is newer than
//! the marker (it names the marker), so it wins over the insert's value,
//! and among marks the usual last writer by (Lamport, peer) wins. Marks
//! with block keys style nothing but markers, and markers show nothing
//! but block keys, so paragraph formats never leak onto text.

use super::{KeyTable, Mark};
use crate::id::Seq;
use crate::style::Attributes;
use crate::value::Value;

/// What an insert of U+FFFC is, beyond the char.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Object {
    /// An embed of this value.
    Embed(Value),
    /// A block marker with these attributes when inserted (no nulls;
    /// shared: a document's markers mostly have equal attributes).
    Block(std::sync::Arc<Attributes>),
}

/// The objects of a document, by the seq of their insert: a persistent
/// vector sorted by seq (a fork shares it). Inserts get ever greater
/// seqs, so adding one is a push at the end (an ordered map costs ~10x
/// more per block marker, measured on B4 with its newlines as blocks).
#[derive(Debug, Clone, Default)]
pub(crate) struct Objects {
    items: im::Vector<(Seq, Object)>,
}

impl Objects {
    /// No objects.
    pub fn new() -> Objects {
        Objects::default()
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The index of the first object at or after `seq`.
    fn lower_bound(&self, seq: Seq) -> usize {
        match self.items.last() {
            Some(&(last, _)) if last < seq => self.items.len(),
            _ => self
                .items
                .binary_search_by(|(s, _)| s.cmp(&seq))
                .unwrap_or_else(|i| i),
        }
    }

    /// The object inserted by `seq`.
    pub fn get(&self, seq: &Seq) -> Option<&Object> {
        if self.items.is_empty() {
            return None;
        }
        let i = self.lower_bound(*seq);
        self.items.get(i).filter(|(s, _)| s == seq).map(|(_, o)| o)
    }

    /// Makes `seq` hold `object` unless it holds one already.
    pub fn insert_if_absent(&mut self, seq: Seq, object: Object) {
        match self.items.last() {
            Some(&(last, _)) if last >= seq => {
                let i = self.lower_bound(seq);
                if self.items.get(i).is_none_or(|(s, _)| *s != seq) {
                    self.items.insert(i, (seq, object));
                }
            }
            _ => self.items.push_back((seq, object)),
        }
    }

    /// The objects of seqs `range`, in order.
    pub fn range(&self, range: std::ops::Range<Seq>) -> impl Iterator<Item = (&Seq, &Object)> {
        let from = if self.items.is_empty() {
            0
        } else {
            self.lower_bound(range.start)
        };
        // `Iter::skip` would step over `from` items one by one; a narrowed
        // focus starts there in O(log n) (and panics when empty).
        (from < self.items.len())
            .then(|| self.items.focus().narrow(from..))
            .into_iter()
            .flatten()
            .take_while(move |(s, _)| *s < range.end)
            .map(|(s, o)| (s, o))
    }

    /// Every object, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&Seq, &Object)> {
        self.items.iter().map(|(s, o)| (s, o))
    }

    /// The objects of seqs below `end`.
    pub fn before(&self, end: Seq) -> Objects {
        let mut items = self.items.clone();
        items.truncate(self.lower_bound(end));
        Objects { items }
    }
}

/// The char an object is in the text: U+FFFC, the object replacement
/// character.
pub(crate) const EMBED_CHAR: char = '\u{FFFC}';

/// The start of the mark key that sets a block attribute: `"\u{1}type"`
/// sets the block's `type`. Keys of [`crate::Text::mark`] may not start
/// with it.
pub(crate) const BLOCK_KEY_PREFIX: char = '\u{1}';

/// Checks attributes a caller gives (styles or block attributes, their
/// values `depth` levels down in what is written): no key starts with
/// [`BLOCK_KEY_PREFIX`], no value nests too deep.
///
/// # Errors
///
/// [`crate::Error::ReservedKey`], [`crate::Error::ValueTooDeep`].
pub(crate) fn check_attributes<'a>(
    attributes: impl IntoIterator<Item = (&'a String, &'a Value)>,
    depth: u32,
) -> crate::Result<()> {
    for (key, value) in attributes {
        if key.starts_with(BLOCK_KEY_PREFIX) {
            return Err(crate::Error::ReservedKey(key.clone()));
        }
        value.check_depth(depth)?;
    }
    Ok(())
}

/// The mark key that sets block attribute `key`.
pub(crate) fn block_key(key: &str) -> String {
    let mut s = String::with_capacity(key.len() + 1);
    s.push(BLOCK_KEY_PREFIX);
    s.push_str(key);
    s
}

/// The block attribute a mark key sets, if it is a block key.
#[inline]
pub(crate) fn block_attribute(key: &str) -> Option<&str> {
    key.strip_prefix(BLOCK_KEY_PREFIX)
}

/// The attributes of a block marker inserted with `base` under the block
/// marks `active` (the marks in force at the marker): per key, the
/// winning block mark's value, else the base value; no nulls.
pub(crate) fn block_attributes(
    base: &Attributes,
    active: &[crate::id::MarkIdx],
    marks: &[Mark],
    keys: &KeyTable,
) -> Attributes {
    let mut winners: Vec<(&str, &Mark)> = Vec::new();
    for m in active.iter().filter_map(|&m| marks.get(m.as_usize())) {
        let Some(name) = block_attribute(keys.name(m.key)) else {
            continue;
        };
        match winners.iter_mut().find(|w| w.0 == name) {
            Some(w) => {
                if m.wins_over(w.1) {
                    w.1 = m;
                }
            }
            None => winners.push((name, m)),
        }
    }
    if winners.is_empty() {
        return base.clone();
    }
    let mut out = base.clone();
    for (name, m) in winners {
        if m.value.is_null() {
            out.remove(name);
        } else {
            out.insert(name.to_owned(), m.value.clone());
        }
    }
    out
}
