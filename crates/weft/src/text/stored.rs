//! [`StoredStyles`]: the styles of a text read from a lazily imported
//! snapshot before its tree is built, and how its tree writes them.
//!
//! Reading a text's styles from its tree needs its anchors, and the
//! anchors need the history (their marks, their places among deleted
//! chars). A read needs far less: which visible chars each mark styles.
//! So a snapshot (format version 5, `docs/FORMAT.md` 4.7) stores, per
//! text with marks, every mark that styles some visible char as a
//! [`StyleSpan`]: the chars between its anchors, its key and its value,
//! the spans listed in the order their marks win over each other on a
//! key ([`Mark::wins_over`]). With the text's visible text that gives
//! the same deltas the tree gives, and nothing else is read until an
//! edit needs the tree.
//!
//! Invariant: a span is never empty, and the spans of a text lie within
//! it (the snapshot loader checks both). A mark whose end anchor comes
//! first, or has not arrived, styles nothing and has no span; block
//! attribute keys have none either (a text with block markers loads at
//! once: see `Snapshot::has_embeds`).

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;

use crate::id::MarkIdx;
use crate::oplog::{KeyTable, Mark};
use crate::style::{Attributes, Delta};
use crate::unit::prefix_units;
use crate::value::Value;

use super::item::{Item, ANCHOR_END};
use super::TextState;

/// A mark as a read sees it: `key` = `value` over visible chars `chars`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StyleSpan {
    /// Visible chars styled (never empty).
    pub chars: Range<u32>,
    pub key: Box<str>,
    /// `Null` removes the key (an unmark), as the mark it stands for does.
    pub value: Value,
}

/// The spans of one text, in the order their marks win (see the module
/// doc): a span beats the earlier ones of its key.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StoredStyles {
    spans: Vec<StyleSpan>,
}

impl StoredStyles {
    /// Styles of spans `spans`, listed in the order they win (each within
    /// the text, none empty).
    pub fn new(spans: Vec<StyleSpan>) -> StoredStyles {
        StoredStyles { spans }
    }

    /// Visible chars `range` of `text` (the text these styles are of;
    /// the range within it) as Quill-style runs: neighbours differ in
    /// attributes, no run is empty, no attribute is `Null`. The runs a
    /// built tree gives ([`TextState::slice_delta`]). O(length of `text`
    /// up to the range's end + s log s) for s spans: each span's edges
    /// change only its key's winner.
    pub fn delta(&self, text: &str, range: Range<u32>) -> Vec<Delta> {
        // Where spans open and close within the range, by position:
        // (position, span index, opens).
        let mut edges: Vec<(u32, usize, bool)> = Vec::new();
        for (k, s) in self.spans.iter().enumerate() {
            let (start, end) = (s.chars.start.max(range.start), s.chars.end.min(range.end));
            if start < end {
                edges.push((start, k, true));
                edges.push((end, k, false));
            }
        }
        edges.sort_unstable_by_key(|e| e.0);
        let mut runs = Runs {
            text,
            ascii: text.is_ascii(),
            at_char: 0,
            at_byte: 0,
            out: Vec::new(),
        };
        runs.skip_to(range.start);
        // Per key, its spans covering the current char; the last listed
        // wins.
        let mut active: HashMap<&str, BTreeSet<usize>> = HashMap::new();
        let mut attributes = Attributes::new();
        let mut e = 0;
        while runs.at_char < range.end {
            let next = edges.get(e).map_or(range.end, |edge| edge.0.min(range.end));
            if next > runs.at_char {
                runs.push(next, &attributes);
            }
            // Each turn takes an edge or reaches the end.
            while let Some(&(_, k, opens)) = edges.get(e).filter(|edge| edge.0 == next) {
                e += 1;
                let Some(span) = self.spans.get(k) else {
                    continue;
                };
                let covering = active.entry(&span.key).or_default();
                if opens {
                    covering.insert(k);
                } else {
                    covering.remove(&k);
                }
                match covering.last().and_then(|&w| self.spans.get(w)) {
                    Some(w) if !w.value.is_null() => {
                        attributes.insert(w.key.to_string(), w.value.clone());
                    }
                    _ => {
                        attributes.remove(&*span.key);
                    }
                }
            }
        }
        runs.out
    }
}

/// Builds runs from a text, moving forward through it.
struct Runs<'a> {
    text: &'a str,
    ascii: bool,
    /// The char and byte offsets reached.
    at_char: u32,
    at_byte: usize,
    out: Vec<Delta>,
}

impl Runs<'_> {
    /// The byte offset of char offset `to` (not before the one reached),
    /// the end of the text if it is shorter.
    fn byte_of(&self, to: u32) -> usize {
        let n = (to - self.at_char) as usize;
        if self.ascii {
            return (self.at_byte + n).min(self.text.len());
        }
        let rest = self.text.get(self.at_byte..).unwrap_or("");
        self.at_byte + prefix_units(rest.as_bytes(), n as u32).0 as usize
    }

    /// Moves to char offset `to` without taking the chars.
    fn skip_to(&mut self, to: u32) {
        self.at_byte = self.byte_of(to);
        self.at_char = to;
    }

    /// Takes the chars up to char offset `to` as a run with `attributes`,
    /// into the previous run if that has the same.
    fn push(&mut self, to: u32, attributes: &Attributes) {
        let end = self.byte_of(to);
        let s = self.text.get(self.at_byte..end).unwrap_or("");
        (self.at_char, self.at_byte) = (to, end);
        if s.is_empty() {
            return;
        }
        if let Some(Delta::Insert {
            insert,
            attributes: last,
        }) = self.out.last_mut()
        {
            if last == attributes {
                insert.push_str(s);
                return;
            }
        }
        self.out.push(Delta::Insert {
            insert: s.to_owned(),
            attributes: attributes.clone(),
        });
    }
}

impl TextState {
    /// Whether the text holds anchors (ever marked, and built: a text
    /// still in a snapshot says so in its [`super::Unloaded`] counts).
    pub fn has_anchors(&self) -> bool {
        !self.anchors.is_empty()
    }

    /// The text's styles as a snapshot stores them (see the module doc):
    /// every live mark whose anchors enclose visible chars, start anchor
    /// first, without block attribute keys, in the order marks win.
    /// O(items + m log m) for m marks.
    pub fn style_spans(&self, marks: &[Mark], keys: &KeyTable) -> Vec<StyleSpan> {
        if !self.has_anchors() {
            return Vec::new();
        }
        style_spans(self.items(), marks, keys)
    }
}

/// [`TextState::style_spans`] of a text whose items, in document order,
/// are `items` (e.g. before they are installed: the snapshot loader
/// checks a text's stored styles against its history this way).
pub(crate) fn style_spans<'a>(
    items: impl Iterator<Item = &'a Item>,
    marks: &[Mark],
    keys: &KeyTable,
) -> Vec<StyleSpan> {
    // Start anchors met, by mark, with the visible chars before them;
    // `None` for a mark whose end came first (its start starts
    // nothing, as `ActiveMarks` reads it).
    let mut starts: HashMap<MarkIdx, Option<u32>> = HashMap::new();
    let mut found: Vec<(&Mark, Range<u32>)> = Vec::new();
    let mut chars = 0u32;
    for item in items {
        if !item.is_anchor() {
            if !item.deleted {
                chars += item.len;
            }
            continue;
        }
        let mark = item.mark();
        if item.anchor & ANCHOR_END == 0 {
            starts.entry(mark).or_insert(Some(chars));
            continue;
        }
        match starts.insert(mark, None) {
            Some(Some(start)) if start < chars => {
                if let Some(m) = marks.get(mark.as_usize()) {
                    found.push((m, start..chars));
                }
            }
            _ => {}
        }
    }
    found.retain(|(m, _)| !keys.is_block(m.key) && !m.cancelled);
    found.sort_unstable_by_key(|(m, _)| (m.lamport, m.peer));
    found
        .into_iter()
        .map(|(m, chars)| StyleSpan {
            chars,
            key: keys.name(m.key).into(),
            value: m.value.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(chars: Range<u32>, key: &str, value: Value) -> StyleSpan {
        StyleSpan {
            chars,
            key: key.into(),
            value,
        }
    }

    /// Later spans win their key, `Null` removes it, equal neighbours
    /// merge, and slices count chars (not bytes).
    #[test]
    fn spans_render_the_runs_a_tree_gives() {
        let styles = StoredStyles::new(vec![
            span(0..4, "bold", Value::Bool(true)),
            span(2..6, "bold", Value::Null),
            span(1..3, "em", Value::Bool(true)),
            span(5..7, "bold", Value::Bool(true)),
        ]);
        let text = "aé😀bcdef";
        let bold = |s: &str| Delta::insert_with(s, [("bold", true)]);
        assert_eq!(
            styles.delta(text, 0..8),
            vec![
                bold("a"),
                Delta::insert_with("é", [("bold", true), ("em", true)]),
                Delta::insert_with("😀", [("em", true)]),
                Delta::insert("bc"),
                bold("de"),
                Delta::insert("f"),
            ]
        );
        assert_eq!(
            styles.delta(text, 2..6),
            vec![
                Delta::insert_with("😀", [("em", true)]),
                Delta::insert("bc"),
                bold("d"),
            ]
        );
        assert_eq!(styles.delta(text, 3..3), vec![]);
        assert_eq!(
            StoredStyles::default().delta(text, 1..3),
            vec![Delta::insert("é😀")]
        );
    }

    /// Spans past the end of a (damaged) text end the runs with the
    /// text.
    #[test]
    fn spans_past_the_text_stop_at_its_end() {
        let styles = StoredStyles::new(vec![span(1..9, "bold", Value::Bool(true))]);
        assert_eq!(
            styles.delta("abc", 0..9),
            vec![
                Delta::insert("a"),
                Delta::insert_with("bc", [("bold", true)])
            ]
        );
    }
}
