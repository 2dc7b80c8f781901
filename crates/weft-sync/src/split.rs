//! Updates cut to fit a message: a sync larger than the message limit is
//! sent as several updates, each of some ops of the whole.

use weft::{Doc, ExportMode, IdSpan, VersionVector};

use crate::{Error, Result};

/// The ops `doc` has and `from` lacks, as updates of at most `limit` bytes
/// each, in an order a receiver can import one by one (pieces whose
/// dependencies come in a later piece wait as pending until it arrives).
/// Empty when `from` has everything.
///
/// # Errors
///
/// [`Error::Weft`] from the export; [`Error::OpTooLarge`] when a single
/// op is larger than `limit` (it cannot be cut).
pub fn updates_since(doc: &Doc, from: &VersionVector, limit: usize) -> Result<Vec<Vec<u8>>> {
    let version = doc.version();
    let pending = !doc.pending_spans().is_empty();
    if from.includes_all(&version) && !pending {
        return Ok(Vec::new());
    }
    let all = doc.export(ExportMode::Updates { from })?;
    if all.len() <= limit {
        return Ok(vec![all]);
    }
    let mut spans = version.spans_missing_from(from);
    spans.extend(doc.pending_spans());
    let mut out = Vec::new();
    cut(doc, &spans, limit, &mut out)?;
    Ok(out)
}

/// The ops an update holds, as a version: what a receiver has once it
/// imported it (ops held pending included). Empty for bytes that do not
/// decode.
pub fn version_of(update: &[u8]) -> VersionVector {
    let mut v = VersionVector::new();
    for span in Doc::spans_in(update).unwrap_or_default() {
        v.extend_to(span.peer, span.counters.end);
    }
    v
}

fn ops(spans: &[IdSpan]) -> u64 {
    spans
        .iter()
        .map(|s| u64::from(s.counters.end - s.counters.start))
        .sum()
}

fn cut(doc: &Doc, spans: &[IdSpan], limit: usize, out: &mut Vec<Vec<u8>>) -> Result<()> {
    let bytes = doc.export(ExportMode::UpdatesInRange(spans))?;
    if bytes.len() <= limit {
        out.push(bytes);
        return Ok(());
    }
    let total = ops(spans);
    if total <= 1 {
        return Err(Error::OpTooLarge {
            bytes: bytes.len(),
            limit,
        });
    }
    // The first half of the ops, then the rest.
    let mut first = Vec::new();
    let mut second = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_sync_is_cut_into_pieces_that_rebuild_the_document() {
        let mut a = Doc::new();
        a.set_peer_id(1).unwrap();
        let mut b = Doc::new();
        b.set_peer_id(2).unwrap();
        for i in 0..300 {
            let doc = if i % 2 == 0 { &mut a } else { &mut b };
            let len = doc.text("t").len();
            doc.text("t")
                .insert(len / 2, &format!("piece {i} of text; "))
                .unwrap();
            doc.commit();
            let update = doc
                .export(ExportMode::Updates {
                    from: &VersionVector::new(),
                })
                .unwrap();
            let other = if i % 2 == 0 { &mut b } else { &mut a };
            other.import(&update).unwrap();
        }
        let pieces = updates_since(&a, &VersionVector::new(), 1000).unwrap();
        assert!(pieces.len() > 4, "{} pieces", pieces.len());
        let mut c = Doc::new();
        for p in &pieces {
            assert!(p.len() <= 1000);
            c.import(p).unwrap();
        }
        assert_eq!(c.version(), a.version());
        assert_eq!(c.text("t").to_string(), a.text("t").to_string());
        assert!(updates_since(&a, &a.version(), 1000).unwrap().is_empty());
    }
}
