//! Updates cut to a size limit, for transports whose messages are
//! bounded (the sync protocol's 1 MiB, a browser's WebSocket).

use crate::error::{Error, Result};
use crate::id::IdSpan;
use crate::version::VersionVector;

use super::{Doc, ExportMode};

impl Doc {
    /// The ops `from` lacks (and the ops held pending), as updates of at
    /// most `limit` bytes each, in an order a receiver can import one by
    /// one: a piece whose dependencies come in a later piece waits as
    /// pending until they arrive. One update when everything fits; none
    /// when `from` has everything. Larger syncs are cut by halving their
    /// op spans and exporting each half with
    /// [`ExportMode::UpdatesInRange`].
    ///
    /// # Errors
    ///
    /// [`Error::OpTooLarge`] when a single op exports to more than `limit`
    /// bytes; as [`Doc::export`] otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, VersionVector};
    ///
    /// let mut doc = Doc::new();
    /// for i in 0..200 {
    ///     doc.text("t").insert(0, &format!("line {i}\n"))?;
    ///     doc.commit();
    /// }
    /// let pieces = doc.export_updates_within(&VersionVector::new(), 1_000)?;
    /// assert!(pieces.len() > 1 && pieces.iter().all(|p| p.len() <= 1_000));
    /// let mut copy = Doc::new();
    /// for p in &pieces {
    ///     copy.import(p)?;
    /// }
    /// assert_eq!(copy.text("t").to_string(), doc.text("t").to_string());
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn export_updates_within(
        &self,
        from: &VersionVector,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>> {
        let version = self.version();
        let pending = self.pending_spans();
        if from.includes_all(&version) && pending.is_empty() {
            return Ok(Vec::new());
        }
        let all = self.export(ExportMode::Updates { from })?;
        if all.len() <= limit {
            return Ok(vec![all]);
        }
        let mut spans = version.spans_missing_from(from);
        spans.extend(pending);
        let mut out = Vec::new();
        self.cut(&spans, limit, &mut out)?;
        Ok(out)
    }

    fn cut(&self, spans: &[IdSpan], limit: usize, out: &mut Vec<Vec<u8>>) -> Result<()> {
        let bytes = self.export(ExportMode::UpdatesInRange(spans))?;
        if bytes.len() <= limit {
            out.push(bytes);
            return Ok(());
        }
        let total: u64 = spans
            .iter()
            .map(|s| u64::from(s.counters.end - s.counters.start))
            .sum();
        if total <= 1 {
            return Err(Error::OpTooLarge {
                bytes: bytes.len(),
                limit,
            });
        }
        // The first half of the ops, then the rest.
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
        self.cut(&first, limit, out)?;
        self.cut(&second, limit, out)
    }
}
