//! The wire protocol (`docs/PROTOCOL.md`): every message is one binary
//! WebSocket message, `[version][kind][fields...]`, its integers LEB128
//! varints, its strings and byte strings length-prefixed.
//!
//! Decoding never panics and never allocates more than the message holds:
//! a message that does not parse is [`DecodeError`].

use weft::VersionVector;

/// The protocol version this crate speaks: the first byte of every message.
pub const PROTOCOL_VERSION: u8 = 1;

/// The largest message either side sends or accepts by default (1 MiB).
/// Syncs larger than this are split into several messages.
pub const DEFAULT_MAX_MESSAGE: usize = 1 << 20;

/// Room left in a message for everything but the update bytes (document
/// id, kind, counts): an update is split when it would not fit with it.
pub const ENVELOPE: usize = 1024;

/// The longest document id (bytes), token and presence payload header.
pub const MAX_ID: usize = 256;

/// The status of an acknowledgement or a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// Done: for an update, it is durable in the store.
    Ok,
    /// The update does not import (malformed or not a Weft update).
    Invalid,
    /// The message is larger than the server accepts.
    TooLarge,
    /// More updates per second than the connection may send; resend later.
    RateLimited,
    /// The token does not allow this (join, or write for updates).
    Forbidden,
    /// The document's history is not the one the client knows (deleted
    /// and created again, restored from elsewhere): never merged.
    DivergentHistory,
    /// No such document (and the server does not create it).
    UnknownDocument,
    /// The connection has joined as many documents as it may.
    TooManyDocuments,
    /// An update for a document the connection has not joined.
    NotJoined,
    /// The server could not store the update (disk full, database
    /// down): nothing of it was stored; resend later.
    Unavailable,
    /// The message does not parse.
    Malformed,
    /// The message's protocol version is not one the server speaks.
    UnsupportedVersion,
    /// The client did not read its messages fast enough: its outgoing
    /// queue filled and it was disconnected (it catches up on reconnect).
    TooSlow,
    /// The server is shutting down or unloading the document.
    GoingAway,
}

impl Status {
    fn code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::Invalid => 1,
            Status::TooLarge => 2,
            Status::RateLimited => 3,
            Status::Forbidden => 4,
            Status::DivergentHistory => 5,
            Status::UnknownDocument => 6,
            Status::TooManyDocuments => 7,
            Status::NotJoined => 8,
            Status::Unavailable => 9,
            Status::Malformed => 10,
            Status::UnsupportedVersion => 11,
            Status::TooSlow => 12,
            Status::GoingAway => 13,
        }
    }

    fn from_code(code: u8) -> Option<Status> {
        Some(match code {
            0 => Status::Ok,
            1 => Status::Invalid,
            2 => Status::TooLarge,
            3 => Status::RateLimited,
            4 => Status::Forbidden,
            5 => Status::DivergentHistory,
            6 => Status::UnknownDocument,
            7 => Status::TooManyDocuments,
            8 => Status::NotJoined,
            9 => Status::Unavailable,
            10 => Status::Malformed,
            11 => Status::UnsupportedVersion,
            12 => Status::TooSlow,
            13 => Status::GoingAway,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::Invalid => "invalid update",
            Status::TooLarge => "too large",
            Status::RateLimited => "rate limited",
            Status::Forbidden => "forbidden",
            Status::DivergentHistory => "divergent history",
            Status::UnknownDocument => "unknown document",
            Status::TooManyDocuments => "too many documents",
            Status::NotJoined => "not joined",
            Status::Unavailable => "unavailable",
            Status::Malformed => "malformed message",
            Status::UnsupportedVersion => "unsupported protocol version",
            Status::TooSlow => "too slow",
            Status::GoingAway => "going away",
        })
    }
}

/// What a token may do with a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// Nothing: joins are refused with [`Status::Forbidden`].
    None,
    /// Join, receive updates and presence, send presence.
    Read,
    /// Read, and send updates.
    Write,
}

/// A message from a client to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientMessage {
    /// Join a document: the server replies [`ServerMessage::Joined`], the
    /// updates the client lacks, then [`ServerMessage::Synced`]; or
    /// [`ServerMessage::Refused`].
    Join {
        /// The document id.
        doc: String,
        /// The token the server's authorisation hook reads.
        token: String,
        /// The epoch of the history the client holds, if it synced before:
        /// a different epoch on the server is refused as
        /// [`Status::DivergentHistory`].
        epoch: Option<u128>,
        /// The client's version.
        version: VersionVector,
    },
    /// An update (bytes of [`weft::Doc::export`]) as batch `batch`: the
    /// server answers [`ServerMessage::Ack`] with the same number.
    Update {
        /// The document id.
        doc: String,
        /// The batch number (the client's own count).
        batch: u64,
        /// The update.
        update: Vec<u8>,
    },
    /// Presence bytes ([`weft::EphemeralStore::encode`]).
    Presence {
        /// The document id.
        doc: String,
        /// The encoded presence.
        bytes: Vec<u8>,
    },
    /// Leave a document.
    Leave {
        /// The document id.
        doc: String,
    },
}

/// A message from the server to a client.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerMessage {
    /// The join succeeded.
    Joined {
        /// The document id.
        doc: String,
        /// The epoch of the document's history.
        epoch: u128,
        /// The server's version: the client sends the ops it lacks.
        version: VersionVector,
        /// What the client may do.
        access: Access,
        /// The largest message the server accepts: the client cuts its
        /// updates to fit.
        max_message: u64,
    },
    /// Updates to import: the catch-up after a join, or edits of others
    /// (already durable), batched when they arrive faster than the client
    /// reads.
    Updates {
        /// The document id.
        doc: String,
        /// The updates, in order.
        updates: Vec<Vec<u8>>,
    },
    /// The catch-up after a join is complete.
    Synced {
        /// The document id.
        doc: String,
    },
    /// The answer to [`ClientMessage::Update`].
    Ack {
        /// The document id.
        doc: String,
        /// The batch number the client gave.
        batch: u64,
        /// [`Status::Ok`] once the update is durable, else why not.
        status: Status,
    },
    /// Presence bytes of other clients.
    Presence {
        /// The document id.
        doc: String,
        /// The encoded presence.
        bytes: Vec<u8>,
    },
    /// A join refused, or a joined document the client is no longer in.
    Refused {
        /// The document id.
        doc: String,
        /// Why.
        status: Status,
        /// Details for a person.
        message: String,
    },
    /// A connection-level error; the server closes the connection after it.
    Error {
        /// Why.
        status: Status,
        /// Details for a person.
        message: String,
    },
}

/// A message that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// What was wrong.
    pub reason: &'static str,
    /// Whether the reason is an unknown protocol version.
    pub unsupported_version: bool,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed message: {}", self.reason)
    }
}

impl std::error::Error for DecodeError {}

fn bad(reason: &'static str) -> DecodeError {
    DecodeError {
        reason,
        unsupported_version: false,
    }
}

// Message kinds.
const JOIN: u8 = 1;
const UPDATE: u8 = 2;
const PRESENCE: u8 = 3;
const LEAVE: u8 = 4;
const JOINED: u8 = 0x81;
const UPDATES: u8 = 0x82;
const SYNCED: u8 = 0x83;
const ACK: u8 = 0x84;
const SERVER_PRESENCE: u8 = 0x85;
const REFUSED: u8 = 0x86;
const ERROR: u8 = 0x87;

struct Writer(Vec<u8>);

impl Writer {
    fn new(kind: u8, capacity: usize) -> Writer {
        let mut out = Vec::with_capacity(capacity + 16);
        out.push(PROTOCOL_VERSION);
        out.push(kind);
        Writer(out)
    }

    fn u64(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }

    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    fn version(&mut self, v: &VersionVector) {
        self.u64(v.len() as u64);
        for (peer, end) in v.iter() {
            self.u64(peer);
            self.u64(u64::from(end));
        }
    }

    fn status(&mut self, s: Status) {
        self.0.push(s.code());
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = *self.bytes.get(self.at).ok_or(bad("truncated"))?;
        self.at += 1;
        Ok(b)
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return Err(bad("varint overflows"));
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("varint too long"))
    }

    fn len(&mut self) -> Result<usize, DecodeError> {
        let n = self.u64()?;
        let left = self.bytes.len() - self.at;
        if n > left as u64 {
            return Err(bad("length past the end"));
        }
        Ok(n as usize)
    }

    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.len()?;
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn str(&mut self) -> Result<String, DecodeError> {
        let b = self.bytes()?;
        if b.len() > MAX_ID {
            return Err(bad("id or token too long"));
        }
        String::from_utf8(b.to_vec()).map_err(|_| bad("string is not UTF-8"))
    }

    fn message(&mut self) -> Result<String, DecodeError> {
        let b = self.bytes()?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }

    fn version(&mut self) -> Result<VersionVector, DecodeError> {
        let n = self.u64()?;
        // Each entry takes at least two bytes.
        if n > ((self.bytes.len() - self.at) / 2) as u64 {
            return Err(bad("version count past the end"));
        }
        let mut v = VersionVector::new();
        for _ in 0..n {
            let peer = self.u64()?;
            let end = u32::try_from(self.u64()?).map_err(|_| bad("counter out of range"))?;
            v.extend_to(peer, end);
        }
        Ok(v)
    }

    fn status(&mut self) -> Result<Status, DecodeError> {
        Status::from_code(self.u8()?).ok_or(bad("unknown status"))
    }

    fn access(&mut self) -> Result<Access, DecodeError> {
        Ok(match self.u8()? {
            0 => Access::None,
            1 => Access::Read,
            2 => Access::Write,
            _ => return Err(bad("unknown access")),
        })
    }

    fn updates(&mut self) -> Result<Vec<Vec<u8>>, DecodeError> {
        let n = self.u64()?;
        if n > (self.bytes.len() - self.at) as u64 {
            return Err(bad("update count past the end"));
        }
        (0..n).map(|_| self.bytes().map(<[u8]>::to_vec)).collect()
    }

    fn end(&self) -> Result<(), DecodeError> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(bad("trailing bytes"))
        }
    }
}

/// Reads the version and kind bytes.
fn header(bytes: &[u8]) -> Result<(u8, Reader<'_>), DecodeError> {
    let mut r = Reader { bytes, at: 0 };
    let version = r.u8().map_err(|_| bad("empty message"))?;
    if version != PROTOCOL_VERSION {
        return Err(DecodeError {
            reason: "unsupported protocol version",
            unsupported_version: true,
        });
    }
    Ok((r.u8()?, r))
}

fn access_code(a: Access) -> u8 {
    match a {
        Access::None => 0,
        Access::Read => 1,
        Access::Write => 2,
    }
}

impl ClientMessage {
    /// The message as bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            ClientMessage::Join {
                doc,
                token,
                epoch,
                version,
            } => {
                let mut w = Writer::new(JOIN, 64);
                w.str(doc);
                w.str(token);
                match epoch {
                    Some(e) => {
                        w.0.push(1);
                        w.0.extend_from_slice(&e.to_le_bytes());
                    }
                    None => w.0.push(0),
                }
                w.version(version);
                w.0
            }
            ClientMessage::Update { doc, batch, update } => {
                let mut w = Writer::new(UPDATE, update.len() + doc.len());
                w.str(doc);
                w.u64(*batch);
                w.bytes(update);
                w.0
            }
            ClientMessage::Presence { doc, bytes } => {
                let mut w = Writer::new(PRESENCE, bytes.len() + doc.len());
                w.str(doc);
                w.bytes(bytes);
                w.0
            }
            ClientMessage::Leave { doc } => {
                let mut w = Writer::new(LEAVE, doc.len());
                w.str(doc);
                w.0
            }
        }
    }

    /// Parses a message.
    ///
    /// # Errors
    ///
    /// [`DecodeError`] if the bytes are not a client message of this
    /// protocol version.
    pub fn decode(bytes: &[u8]) -> Result<ClientMessage, DecodeError> {
        let (kind, mut r) = header(bytes)?;
        let message = match kind {
            JOIN => {
                let doc = r.str()?;
                let token = r.str()?;
                let epoch = match r.u8()? {
                    0 => None,
                    1 => {
                        let mut e = [0u8; 16];
                        for b in &mut e {
                            *b = r.u8()?;
                        }
                        Some(u128::from_le_bytes(e))
                    }
                    _ => return Err(bad("bad epoch flag")),
                };
                let version = r.version()?;
                ClientMessage::Join {
                    doc,
                    token,
                    epoch,
                    version,
                }
            }
            UPDATE => ClientMessage::Update {
                doc: r.str()?,
                batch: r.u64()?,
                update: r.bytes()?.to_vec(),
            },
            PRESENCE => ClientMessage::Presence {
                doc: r.str()?,
                bytes: r.bytes()?.to_vec(),
            },
            LEAVE => ClientMessage::Leave { doc: r.str()? },
            _ => return Err(bad("unknown message kind")),
        };
        r.end()?;
        Ok(message)
    }
}

impl ServerMessage {
    /// The message as bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            ServerMessage::Joined {
                doc,
                epoch,
                version,
                access,
                max_message,
            } => {
                let mut w = Writer::new(JOINED, 64);
                w.str(doc);
                w.0.extend_from_slice(&epoch.to_le_bytes());
                w.version(version);
                w.0.push(access_code(*access));
                w.u64(*max_message);
                w.0
            }
            ServerMessage::Updates { doc, updates } => encode_updates(doc, updates),
            ServerMessage::Synced { doc } => {
                let mut w = Writer::new(SYNCED, doc.len());
                w.str(doc);
                w.0
            }
            ServerMessage::Ack { doc, batch, status } => {
                let mut w = Writer::new(ACK, doc.len());
                w.str(doc);
                w.u64(*batch);
                w.status(*status);
                w.0
            }
            ServerMessage::Presence { doc, bytes } => {
                let mut w = Writer::new(SERVER_PRESENCE, bytes.len() + doc.len());
                w.str(doc);
                w.bytes(bytes);
                w.0
            }
            ServerMessage::Refused {
                doc,
                status,
                message,
            } => {
                let mut w = Writer::new(REFUSED, message.len() + doc.len());
                w.str(doc);
                w.status(*status);
                w.str(message);
                w.0
            }
            ServerMessage::Error { status, message } => {
                let mut w = Writer::new(ERROR, message.len());
                w.status(*status);
                w.str(message);
                w.0
            }
        }
    }

    /// Parses a message.
    ///
    /// # Errors
    ///
    /// [`DecodeError`] if the bytes are not a server message of this
    /// protocol version.
    pub fn decode(bytes: &[u8]) -> Result<ServerMessage, DecodeError> {
        let (kind, mut r) = header(bytes)?;
        let message = match kind {
            JOINED => {
                let doc = r.str()?;
                let mut e = [0u8; 16];
                for b in &mut e {
                    *b = r.u8()?;
                }
                ServerMessage::Joined {
                    doc,
                    epoch: u128::from_le_bytes(e),
                    version: r.version()?,
                    access: r.access()?,
                    max_message: r.u64()?,
                }
            }
            UPDATES => ServerMessage::Updates {
                doc: r.str()?,
                updates: r.updates()?,
            },
            SYNCED => ServerMessage::Synced { doc: r.str()? },
            ACK => ServerMessage::Ack {
                doc: r.str()?,
                batch: r.u64()?,
                status: r.status()?,
            },
            SERVER_PRESENCE => ServerMessage::Presence {
                doc: r.str()?,
                bytes: r.bytes()?.to_vec(),
            },
            REFUSED => ServerMessage::Refused {
                doc: r.str()?,
                status: r.status()?,
                message: r.message()?,
            },
            ERROR => ServerMessage::Error {
                status: r.status()?,
                message: r.message()?,
            },
            _ => return Err(bad("unknown message kind")),
        };
        r.end()?;
        Ok(message)
    }
}

/// An [`ServerMessage::Updates`] message, written from borrowed updates
/// (the server relays one shared copy to many clients).
pub fn encode_updates<B: AsRef<[u8]>>(doc: &str, updates: &[B]) -> Vec<u8> {
    let len: usize = updates.iter().map(|u| u.as_ref().len() + 5).sum();
    let mut w = Writer::new(UPDATES, len + doc.len());
    w.str(doc);
    w.u64(updates.len() as u64);
    for u in updates {
        w.bytes(u.as_ref());
    }
    w.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips() {
        let mut v = VersionVector::new();
        v.extend_to(7, 3);
        v.extend_to(u64::MAX, u32::MAX);
        let client = [
            ClientMessage::Join {
                doc: "d".into(),
                token: "t".into(),
                epoch: Some(u128::MAX - 5),
                version: v.clone(),
            },
            ClientMessage::Join {
                doc: "d".into(),
                token: String::new(),
                epoch: None,
                version: VersionVector::new(),
            },
            ClientMessage::Update {
                doc: "d".into(),
                batch: 1 << 40,
                update: vec![1, 2, 3],
            },
            ClientMessage::Presence {
                doc: "d".into(),
                bytes: vec![9],
            },
            ClientMessage::Leave { doc: "d".into() },
        ];
        for m in client {
            assert_eq!(ClientMessage::decode(&m.encode()), Ok(m));
        }
        let server = [
            ServerMessage::Joined {
                doc: "d".into(),
                epoch: 42,
                version: v,
                access: Access::Read,
                max_message: 1 << 20,
            },
            ServerMessage::Updates {
                doc: "d".into(),
                updates: vec![vec![1], vec![], vec![2, 3]],
            },
            ServerMessage::Synced { doc: "d".into() },
            ServerMessage::Ack {
                doc: "d".into(),
                batch: 3,
                status: Status::RateLimited,
            },
            ServerMessage::Presence {
                doc: "d".into(),
                bytes: vec![],
            },
            ServerMessage::Refused {
                doc: "d".into(),
                status: Status::DivergentHistory,
                message: "x".into(),
            },
            ServerMessage::Error {
                status: Status::TooSlow,
                message: "y".into(),
            },
        ];
        for m in server {
            assert_eq!(ServerMessage::decode(&m.encode()), Ok(m));
        }
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_not_a_panic() {
        let m = ClientMessage::Join {
            doc: "doc".into(),
            token: "tok".into(),
            epoch: Some(1),
            version: {
                let mut v = VersionVector::new();
                v.extend_to(1, 2);
                v
            },
        }
        .encode();
        for cut in 0..m.len() {
            assert!(ClientMessage::decode(&m[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..m.len() {
            for b in [0u8, 0x7f, 0x80, 0xff] {
                let mut c = m.clone();
                c[i] = b;
                let _ = ClientMessage::decode(&c);
                let _ = ServerMessage::decode(&c);
            }
        }
        let mut huge = vec![PROTOCOL_VERSION, UPDATES, 1, b'd'];
        huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(ServerMessage::decode(&huge).is_err());
        assert!(
            ClientMessage::decode(&[2, JOIN])
                .unwrap_err()
                .unsupported_version
        );
    }
}
