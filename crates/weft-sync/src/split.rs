//! Updates cut to fit a message: a sync larger than the message limit is
//! sent as several updates, each of some ops of the whole.

use weft::{Doc, VersionVector};

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
    doc.export_updates_within(from, limit).map_err(|e| match e {
        weft::Error::OpTooLarge { bytes, limit } => Error::OpTooLarge { bytes, limit },
        e => Error::Weft(e),
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use weft::ExportMode;

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
