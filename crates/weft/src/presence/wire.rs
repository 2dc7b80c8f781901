//! The bytes [`super::EphemeralStore`] sends: a list of per-key records.
//!
//! ```text
//! u8   magic 0xC8
//! u8   format version 1
//! varint n (records)
//! n x  varint length + UTF-8 key   (keys strictly increasing, bytewise)
//!      varint clock                (>= 1)
//!      varint timestamp            (ms since the Unix epoch, the writer's)
//!      u8 0 = deleted, 1 = a value follows in the layout of
//!         `encoding/value_bytes.rs` (the one marks use)
//! u32 LE  checksum: low 32 bits of the xxh3-64 of everything before
//! ```
//!
//! Decoding reads the whole message into records before anything is
//! applied, so bad bytes change nothing; it never panics and never
//! allocates more than the input justifies.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use crate::bytes::{bounded_capacity, open_framed, write_bytes, write_checksum, write_varint};
use crate::encoding::value_bytes::{read_string, read_value, write_value};
use crate::error::Result;
use crate::value::Value;

/// First byte of encoded presence state.
const MAGIC: u8 = 0xC8;
/// Format version of encoded presence state.
const VERSION: u8 = 1;

/// One key's state as it travels.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Record {
    pub key: String,
    /// `None`: the key was deleted.
    pub value: Option<Value>,
    /// Per-key logical clock: a later write has a larger one.
    pub clock: u64,
    /// When the writer wrote it, in ms since the Unix epoch.
    pub timestamp: u64,
}

/// Encodes records, which must come in strictly increasing key order.
pub(super) fn encode<'a>(len: usize, records: impl Iterator<Item = RecordRef<'a>>) -> Vec<u8> {
    let mut out = vec![MAGIC, VERSION];
    write_varint(&mut out, len as u64);
    for r in records {
        write_bytes(&mut out, r.key.as_bytes());
        write_varint(&mut out, r.clock);
        write_varint(&mut out, r.timestamp);
        match r.value {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                write_value(&mut out, v);
            }
        }
    }
    write_checksum(&mut out);
    out
}

/// A borrowed [`Record`], for encoding without cloning values.
#[derive(Debug, Clone, Copy)]
pub(super) struct RecordRef<'a> {
    pub key: &'a str,
    pub value: Option<&'a Value>,
    pub clock: u64,
    pub timestamp: u64,
}

/// Decodes every record of `bytes`.
///
/// # Errors
///
/// `UnexpectedEof`, `BadMagic`, `ChecksumMismatch`, `UnsupportedVersion`,
/// and `Malformed` for keys out of order or repeated, a zero clock, an
/// unknown flag, or a bad value.
pub(super) fn decode(bytes: &[u8]) -> Result<Vec<Record>> {
    let mut r = open_framed(bytes, MAGIC, VERSION)?;
    // Each record takes at least four bytes; `count` checks one.
    let n = r.count("record count")?;
    let mut records: Vec<Record> = Vec::with_capacity(bounded_capacity(n));
    for _ in 0..n {
        let key = read_string(&mut r)?;
        if records.last().is_some_and(|prev| prev.key >= key) {
            return Err(r.malformed("presence keys out of order"));
        }
        let clock = r.varint()?;
        if clock == 0 {
            return Err(r.malformed("presence clock"));
        }
        let timestamp = r.varint()?;
        let value = match r.u8()? {
            0 => None,
            1 => Some(read_value(&mut r, 0)?),
            _ => return Err(r.malformed("presence value flag")),
        };
        records.push(Record {
            key,
            value,
            clock,
            timestamp,
        });
    }
    if !r.is_empty() {
        return Err(r.malformed("bytes after the records"));
    }
    Ok(records)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "tests"
)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn framed(body: &[u8]) -> Vec<u8> {
        let mut out = vec![MAGIC, VERSION];
        out.extend_from_slice(body);
        write_checksum(&mut out);
        out
    }

    #[test]
    fn records_round_trip() {
        let v = Value::from("Alice");
        let records = [
            RecordRef {
                key: "a",
                value: Some(&v),
                clock: 3,
                timestamp: 1_700_000_000_000,
            },
            RecordRef {
                key: "b",
                value: None,
                clock: u64::MAX,
                timestamp: 0,
            },
        ];
        let bytes = encode(2, records.into_iter());
        let back = decode(&bytes).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].value, Some(v));
        assert_eq!(back[1].clock, u64::MAX);
        assert_eq!(decode(&encode(0, std::iter::empty())).unwrap(), vec![]);
    }

    #[test]
    fn inconsistent_records_are_errors() {
        let malformed = |body: &[u8]| match decode(&framed(body)) {
            Err(Error::Malformed { what, .. }) => what,
            other => panic!("{other:?}"),
        };
        // Key "a" twice; "b" before "a".
        assert_eq!(
            malformed(&[2, 1, b'a', 1, 1, 0, 1, b'a', 2, 1, 0]),
            "presence keys out of order"
        );
        assert_eq!(
            malformed(&[2, 1, b'b', 1, 1, 0, 1, b'a', 2, 1, 0]),
            "presence keys out of order"
        );
        assert_eq!(malformed(&[1, 1, b'a', 0, 1, 0]), "presence clock");
        assert_eq!(malformed(&[1, 1, b'a', 1, 1, 2]), "presence value flag");
        assert_eq!(malformed(&[1, 1, b'a', 1, 1, 1, 9]), "value tag");
        assert_eq!(malformed(&[1, 1, 0xFF, 1, 1, 0]), "UTF-8 string");
        assert_eq!(malformed(&[0, 0]), "bytes after the records");
        assert_eq!(malformed(&[100, 0]), "record count");
    }
}
