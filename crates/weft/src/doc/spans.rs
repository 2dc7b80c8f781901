//! What an export holds, read without importing it.

use crate::encoding::{self, Decoded};
use crate::error::Result;
use crate::id::IdSpan;
use crate::merge::Update;

use super::Doc;

/// One span per change of `update`.
fn change_spans(update: &Update, out: &mut Vec<IdSpan>) {
    out.extend(
        update
            .changes
            .iter()
            .map(|c| IdSpan::new(c.peer, c.counter..c.counter.saturating_add(c.len))),
    );
}

impl Doc {
    /// The ops the export `bytes` holds, read without importing it: one
    /// span per change of an update; for a snapshot, one span per peer of
    /// its version (from counter 0, trimmed ops of a shallow snapshot
    /// included) and then the spans of the pending updates it carries.
    /// Spans may overlap. The bytes are checked as [`Doc::import`]
    /// checks them before it applies anything (header, checksum,
    /// structure), so bytes this accepts may still fail to import (an
    /// origin that is not a char, for example).
    ///
    /// For a store or server that keeps updates as they arrived: an
    /// update whose every span a version includes holds nothing that
    /// version lacks. O(`bytes`).
    ///
    /// # Errors
    ///
    /// As [`Doc::import`] for bytes that are not an export of a version
    /// this build reads: [`crate::Error::BadMagic`],
    /// [`crate::Error::ChecksumMismatch`], [`crate::Error::Malformed`],
    /// [`crate::Error::Inconsistent`], and the like.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, ExportMode, IdSpan, VersionVector};
    ///
    /// let mut doc = Doc::new();
    /// doc.set_peer_id(7)?;
    /// doc.text("t").insert(0, "abc")?;
    /// let update = doc.export(ExportMode::Updates { from: &VersionVector::new() })?;
    /// assert_eq!(Doc::spans_in(&update)?, [IdSpan::new(7, 0..3)]);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn spans_in(bytes: &[u8]) -> Result<Vec<IdSpan>> {
        let mut out = Vec::new();
        match encoding::decode(bytes)? {
            Decoded::Update(update) => change_spans(&update, &mut out),
            Decoded::Snapshot(snapshot) => {
                out.extend(
                    snapshot
                        .meta
                        .version
                        .iter()
                        .filter(|&(_, end)| end > 0)
                        .map(|(peer, end)| IdSpan::new(peer, 0..end)),
                );
                for parked in &snapshot.pending {
                    change_spans(&parked.update, &mut out);
                }
            }
        }
        Ok(out)
    }
}
