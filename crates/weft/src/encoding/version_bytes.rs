//! The binary form of a [`VersionVector`] and of [`Frontiers`], for a sync
//! handshake ("here is what I have") without a hand-written format.
//!
//! ```text
//! version vector                      frontiers
//!   u8   magic 0xC5                     u8   magic 0xC6
//!   u8   format version 1               u8   format version 1
//!   varint n (peers)                    varint n (heads)
//!   n x  varint peer delta              n x  varint peer delta
//!        varint counter end (>= 1)           varint counter
//!   u32 LE  checksum                    u32 LE  checksum
//! ```
//!
//! Entries are sorted (by peer; heads by peer then counter). A peer is
//! written as its difference from the previous entry's peer (the first one
//! as is), so unsorted input cannot be written: a vector's deltas are at
//! least 1, and two heads of one peer (delta 0) must have increasing
//! counters. The checksum is the low 32 bits of the xxh3-64 of everything
//! before it. Peer `u64::MAX` is reserved and refused, as are zero
//! entries, which a [`VersionVector`] never holds.

use crate::error::{Error, Result};
use crate::id::{Counter, OpId, PeerId};
use crate::version::{Frontiers, VersionVector};

use crate::bytes::{open_framed, write_checksum, write_varint, Reader};

/// First byte of an encoded [`VersionVector`].
const VECTOR_MAGIC: u8 = 0xC5;
/// First byte of encoded [`Frontiers`].
const FRONTIERS_MAGIC: u8 = 0xC6;
/// Format version of both.
const VERSION: u8 = 1;

/// Writes `(peer, counter)` pairs sorted by peer, each peer as its
/// difference from the previous one, in a frame.
fn encode_pairs(magic: u8, len: usize, pairs: impl Iterator<Item = (PeerId, Counter)>) -> Vec<u8> {
    let mut out = vec![magic, VERSION];
    write_varint(&mut out, len as u64);
    let mut prev = 0;
    for (peer, counter) in pairs {
        write_varint(&mut out, peer - prev);
        write_varint(&mut out, u64::from(counter));
        prev = peer;
    }
    write_checksum(&mut out);
    out
}

/// Reads the pairs [`encode_pairs`] wrote and calls `push` with each, its
/// peer's delta from the previous peer (`None` for the first), and the
/// reader for error offsets.
fn decode_pairs(
    bytes: &[u8],
    magic: u8,
    mut push: impl FnMut(&Reader<'_>, Option<u64>, PeerId, Counter) -> Result<()>,
) -> Result<()> {
    let mut r = open_framed(bytes, magic, VERSION)?;
    // Each pair takes at least two bytes.
    let n = r.count("entry count")?;
    let mut prev: Option<PeerId> = None;
    for _ in 0..n {
        let delta = r.varint()?;
        let peer = match prev {
            None => delta,
            Some(p) => p.checked_add(delta).ok_or_else(|| r.malformed("peer"))?,
        };
        if peer == PeerId::MAX {
            return Err(Error::InvalidPeerId(peer));
        }
        let counter = r.u32("counter")?;
        push(&r, prev.map(|_| delta), peer, counter)?;
        prev = Some(peer);
    }
    if !r.is_empty() {
        return Err(r.malformed("bytes after the entries"));
    }
    Ok(())
}

impl VersionVector {
    /// The version as bytes: a magic byte, a format version, the peers as
    /// varint deltas with their counters, and a 32-bit checksum. An empty
    /// vector takes 7 bytes; each peer about 2 to 15 more.
    ///
    /// Runs in O(p) for p peers. A vector holding the reserved peer
    /// `u64::MAX` (which no document makes) encodes, but does not decode.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, VersionVector};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "hi")?;
    /// let bytes = doc.version().encode();
    /// assert_eq!(VersionVector::decode(&bytes)?, doc.version());
    /// assert!(VersionVector::decode(&bytes[..bytes.len() - 1]).is_err());
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        encode_pairs(VECTOR_MAGIC, self.len(), self.iter())
    }

    /// Reads bytes written by [`VersionVector::encode`].
    ///
    /// # Errors
    ///
    /// [`Error::BadMagic`] for bytes that are not a version vector (a
    /// [`Frontiers`] encoding included), [`Error::UnsupportedVersion`],
    /// [`Error::UnexpectedEof`] when truncated, [`Error::ChecksumMismatch`]
    /// when damaged, [`Error::InvalidPeerId`] for the reserved peer, and
    /// [`Error::Malformed`] for a repeated peer, a zero counter or any other
    /// inconsistency.
    pub fn decode(bytes: &[u8]) -> Result<VersionVector> {
        let mut v = VersionVector::new();
        decode_pairs(bytes, VECTOR_MAGIC, |r, delta, peer, end| {
            if delta == Some(0) {
                return Err(r.malformed("repeated peer"));
            }
            if end == 0 {
                return Err(r.malformed("zero counter"));
            }
            v.set(peer, end);
            Ok(())
        })?;
        Ok(v)
    }
}

impl Frontiers {
    /// The heads as bytes: a magic byte, a format version, the heads as
    /// varint peer deltas with their counters, and a 32-bit checksum. The
    /// empty frontiers take 7 bytes; each head about 2 to 15 more.
    ///
    /// Runs in O(h) for h heads.
    ///
    /// # Examples
    ///
    /// ```
    /// use weft::{Doc, Frontiers};
    ///
    /// let mut doc = Doc::new();
    /// doc.text("t").insert(0, "hi")?;
    /// let heads = doc.frontiers();
    /// assert_eq!(Frontiers::decode(&heads.encode())?, heads);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        encode_pairs(
            FRONTIERS_MAGIC,
            self.len(),
            self.iter().map(|id| (id.peer, id.counter)),
        )
    }

    /// Reads bytes written by [`Frontiers::encode`].
    ///
    /// # Errors
    ///
    /// [`Error::BadMagic`] for bytes that are not frontiers (a
    /// [`VersionVector`] encoding included), [`Error::UnsupportedVersion`],
    /// [`Error::UnexpectedEof`] when truncated, [`Error::ChecksumMismatch`]
    /// when damaged, [`Error::InvalidPeerId`] for the reserved peer, and
    /// [`Error::Malformed`] for heads out of order or repeated.
    pub fn decode(bytes: &[u8]) -> Result<Frontiers> {
        let mut heads: Vec<OpId> = Vec::new();
        decode_pairs(bytes, FRONTIERS_MAGIC, |r, delta, peer, counter| {
            if delta == Some(0) && heads.last().is_some_and(|h| h.counter >= counter) {
                return Err(r.malformed("heads out of order"));
            }
            heads.push(OpId::new(peer, counter));
            Ok(())
        })?;
        // Sorted and distinct, so collecting keeps every head.
        Ok(heads.into_iter().collect())
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests unwrap what must succeed")]
mod tests {
    use super::*;

    /// A frame around `body`, as the encoders write it.
    fn framed(magic: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![magic, VERSION];
        out.extend_from_slice(body);
        write_checksum(&mut out);
        out
    }

    #[test]
    fn empty_versions_take_seven_bytes() {
        let v = VersionVector::new().encode();
        assert_eq!(v.len(), 7);
        assert_eq!(VersionVector::decode(&v).unwrap(), VersionVector::new());
        let f = Frontiers::new().encode();
        assert_eq!(f.len(), 7);
        assert_eq!(Frontiers::decode(&f).unwrap(), Frontiers::new());
        // The two formats do not read each other.
        assert_eq!(Frontiers::decode(&v), Err(Error::BadMagic));
        assert_eq!(VersionVector::decode(&f), Err(Error::BadMagic));
    }

    #[test]
    fn non_canonical_contents_are_errors() {
        // Peer 5 twice (delta 0).
        let repeated = framed(VECTOR_MAGIC, &[2, 5, 1, 0, 2]);
        assert!(matches!(
            VersionVector::decode(&repeated),
            Err(Error::Malformed {
                what: "repeated peer",
                ..
            })
        ));
        let zero = framed(VECTOR_MAGIC, &[1, 5, 0]);
        assert!(matches!(
            VersionVector::decode(&zero),
            Err(Error::Malformed {
                what: "zero counter",
                ..
            })
        ));
        // Two heads of peer 5, counters 3 then 3, and 3 then 2.
        for second in [3, 2] {
            let heads = framed(FRONTIERS_MAGIC, &[2, 5, 3, 0, second]);
            assert!(matches!(
                Frontiers::decode(&heads),
                Err(Error::Malformed {
                    what: "heads out of order",
                    ..
                })
            ));
        }
        let ok = framed(FRONTIERS_MAGIC, &[2, 5, 3, 0, 4]);
        assert_eq!(Frontiers::decode(&ok).unwrap().len(), 2);
        // Peer u64::MAX, first as is, then as a delta.
        let mut body = vec![1];
        write_varint(&mut body, u64::MAX);
        body.push(1);
        assert_eq!(
            VersionVector::decode(&framed(VECTOR_MAGIC, &body)),
            Err(Error::InvalidPeerId(u64::MAX))
        );
        let mut body = vec![2, 1, 1];
        write_varint(&mut body, u64::MAX - 1);
        body.push(1);
        assert_eq!(
            Frontiers::decode(&framed(FRONTIERS_MAGIC, &body)),
            Err(Error::InvalidPeerId(u64::MAX))
        );
        // A delta past u64::MAX.
        let mut body = vec![2, 2, 1];
        write_varint(&mut body, u64::MAX);
        body.push(1);
        assert!(matches!(
            VersionVector::decode(&framed(VECTOR_MAGIC, &body)),
            Err(Error::Malformed { what: "peer", .. })
        ));
        // A counter past u32::MAX, a trailing byte, another version.
        let mut body = vec![1, 1];
        write_varint(&mut body, 1 << 32);
        assert!(VersionVector::decode(&framed(VECTOR_MAGIC, &body)).is_err());
        assert!(VersionVector::decode(&framed(VECTOR_MAGIC, &[1, 1, 1, 0])).is_err());
        let mut other = vec![VECTOR_MAGIC, 2, 0];
        write_checksum(&mut other);
        assert_eq!(
            VersionVector::decode(&other),
            Err(Error::UnsupportedVersion(2))
        );
    }
}
