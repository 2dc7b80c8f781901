//! The commit infos section (format version 2): the messages and
//! timestamps of commits, in updates and snapshots alike.
//!
//! ```text
//! varint n, then n x:
//!   u64 LE    peer id
//!   varint    first counter
//!   varint    number of ops (>= 1)
//!   u8        flags: bit 0 a timestamp follows, bit 1 a message follows
//!   [varint   zigzag(timestamp), seconds since the Unix epoch]
//!   [varint   length, then the UTF-8 message]
//! ```
//! A peer's commits never overlap; they are written by peer and counter.

use crate::error::{Error, Result};
use crate::id::PeerId;
use crate::oplog::CommitInfo;

use crate::bytes::{bounded_capacity, unzigzag, write_bytes, write_varint, zigzag, Reader};

const HAS_TIMESTAMP: u8 = 1;
const HAS_MESSAGE: u8 = 2;

/// Writes `infos` (sorted by peer and counter) as a section value.
pub(crate) fn write_infos<'a>(
    out: &mut Vec<u8>,
    infos: impl ExactSizeIterator<Item = &'a CommitInfo>,
) {
    write_varint(out, infos.len() as u64);
    for i in infos {
        out.extend_from_slice(&i.peer.to_le_bytes());
        write_varint(out, u64::from(i.start));
        write_varint(out, u64::from(i.end - i.start));
        let flags = if i.timestamp.is_some() {
            HAS_TIMESTAMP
        } else {
            0
        } | if i.message.is_some() { HAS_MESSAGE } else { 0 };
        out.push(flags);
        if let Some(t) = i.timestamp {
            write_varint(out, zigzag(t));
        }
        if let Some(m) = &i.message {
            write_bytes(out, m.as_bytes());
        }
    }
}

/// Reads a section written by [`write_infos`].
///
/// # Errors
///
/// [`Error::UnexpectedEof`], [`Error::Malformed`] (bad flags, an empty or
/// overflowing span, a message that is not UTF-8, overlapping or unsorted
/// commits, trailing bytes), [`Error::InvalidPeerId`].
pub(crate) fn read_infos(r: &mut Reader<'_>) -> Result<Vec<CommitInfo>> {
    let n = r.count("commit info count")?;
    let mut out: Vec<CommitInfo> = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        let peer = r.u64_le()?;
        if peer == PeerId::MAX {
            return Err(Error::InvalidPeerId(peer));
        }
        let start = r.u32("commit counter")?;
        let len = r.u32("commit length")?;
        let end = start
            .checked_add(len)
            .filter(|_| len > 0)
            .ok_or(r.malformed("commit span"))?;
        let flags = r.u8()?;
        if flags & !(HAS_TIMESTAMP | HAS_MESSAGE) != 0 {
            return Err(r.malformed("commit info flags"));
        }
        let timestamp = if flags & HAS_TIMESTAMP != 0 {
            Some(unzigzag(r.varint()?))
        } else {
            None
        };
        let message = if flags & HAS_MESSAGE != 0 {
            let bytes = r.bytes()?;
            let s = std::str::from_utf8(bytes).map_err(|_| r.malformed("commit message"))?;
            Some(s.into())
        } else {
            None
        };
        if out
            .last()
            .is_some_and(|p| p.peer > peer || (p.peer == peer && p.end > start))
        {
            return Err(r.malformed("commit infos out of order"));
        }
        out.push(CommitInfo {
            peer,
            start,
            end,
            timestamp,
            message,
        });
    }
    if !r.is_empty() {
        return Err(r.malformed("trailing bytes after commit infos"));
    }
    Ok(out)
}
