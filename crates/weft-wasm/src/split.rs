//! Updates cut to fit a message (as `weft_sync::split` does on the
//! server side; that crate does not build for the browser).

use weft::{Doc, ExportMode, IdSpan, VersionVector};

use crate::convert::err;
use wasm_bindgen::JsError;

/// The ops `doc` has and `from` lacks, as updates of at most `limit` bytes
/// each, importable one by one in order. Empty when `from` has
/// everything. Fails when a single op is larger than `limit`.
pub(crate) fn updates_since(
    doc: &Doc,
    from: &VersionVector,
    limit: usize,
) -> Result<Vec<Vec<u8>>, JsError> {
    let version = doc.version();
    let pending = doc.pending_spans();
    if from.includes_all(&version) && pending.is_empty() {
        return Ok(Vec::new());
    }
    let all = doc.export(ExportMode::Updates { from }).map_err(err)?;
    if all.len() <= limit {
        return Ok(vec![all]);
    }
    let mut spans = version.spans_missing_from(from);
    spans.extend(pending);
    let mut out = Vec::new();
    cut(doc, &spans, limit, &mut out)?;
    Ok(out)
}

fn ops(spans: &[IdSpan]) -> u64 {
    spans
        .iter()
        .map(|s| u64::from(s.counters.end - s.counters.start))
        .sum()
}

fn cut(doc: &Doc, spans: &[IdSpan], limit: usize, out: &mut Vec<Vec<u8>>) -> Result<(), JsError> {
    let bytes = doc.export(ExportMode::UpdatesInRange(spans)).map_err(err)?;
    if bytes.len() <= limit {
        out.push(bytes);
        return Ok(());
    }
    let total = ops(spans);
    if total <= 1 {
        return Err(err(format!(
            "one op of {} bytes is over the limit of {limit}",
            bytes.len()
        )));
    }
    let (mut first, mut second) = (Vec::new(), Vec::new());
    let mut left = total / 2;
    for s in spans {
        let n = u64::from(s.counters.end - s.counters.start);
        if left >= n {
            first.push(s.clone());
            left -= n;
        } else if left > 0 {
            let mid = s.counters.start + left as u32;
            first.push(IdSpan::new(s.peer, s.counters.start..mid));
            second.push(IdSpan::new(s.peer, mid..s.counters.end));
            left = 0;
        } else {
            second.push(s.clone());
        }
    }
    cut(doc, &first, limit, out)?;
    cut(doc, &second, limit, out)
}
