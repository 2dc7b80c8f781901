//! The styles entries of a snapshot (format version 5): per text with
//! marks, what a read of its styles needs before the text's tree and the
//! history are loaded (see `text::StoredStyles`; docs/FORMAT.md 4.7).
//!
//! ```text
//! "a" + u32 BE i  (every text with anchors) count n spans, then per span,
//!                 in the order their marks win on a key (last wins):
//!                 u32 varint first char, u32 varint length (>= 1; the
//!                 span ends within the text's visible chars), string
//!                 key, value
//! ```

use crate::error::Result;
use crate::oplog::OpLog;
use crate::text::{StoredStyles, StyleSpan, TextState};

use super::value_bytes::{read_string, read_value, write_value};
use crate::bytes::{bounded_capacity, write_bytes, write_varint, Reader};

/// Key tag of a text's styles (followed by the text index).
pub(super) const KEY_STYLES: u8 = b'a';

/// The styles value of text `state` (before packing), or `None` for a
/// text without anchors (whose meta says so: it has no entry).
pub(super) fn write_styles(log: &OpLog, state: &TextState) -> Option<Vec<u8>> {
    if !state.has_anchors() {
        return None;
    }
    let spans = state.style_spans(log.marks(), log.keys());
    let mut out = Vec::with_capacity(spans.len() * 12 + 1);
    write_varint(&mut out, spans.len() as u64);
    for s in &spans {
        write_varint(&mut out, u64::from(s.chars.start));
        write_varint(&mut out, u64::from(s.chars.end - s.chars.start));
        write_bytes(&mut out, s.key.as_bytes());
        write_value(&mut out, &s.value);
    }
    Some(out)
}

/// Reads a styles value (decompressed) of a text of `chars` visible
/// chars. Every span must be non-empty and end within the text.
pub(super) fn read_styles(raw: &[u8], chars: u32) -> Result<StoredStyles> {
    let mut r = Reader::new(raw, 0);
    let n = r.count("style span count")?;
    let mut spans = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        let start = r.u32("style span start")?;
        let len = r.u32("style span length")?;
        let end = start.checked_add(len).filter(|&e| len > 0 && e <= chars);
        let end = end.ok_or_else(|| r.malformed("style span"))?;
        let key = read_string(&mut r)?;
        let value = read_value(&mut r, 0)?;
        spans.push(StyleSpan {
            chars: start..end,
            key: key.into(),
            value,
        });
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing style bytes"));
    }
    Ok(StoredStyles::new(spans))
}
