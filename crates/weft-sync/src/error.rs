//! Errors of the server and the client.

use crate::protocol::{DecodeError, Status};

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A Weft call failed (e.g. an update that does not import).
    Weft(weft::Error),
    /// The store failed.
    Store(weft_store::Error),
    /// A single op is larger than the message limit, so it cannot be sent.
    OpTooLarge {
        /// The op's encoded size.
        bytes: usize,
        /// The message limit.
        limit: usize,
    },
    /// A socket or file error.
    Io(std::io::Error),
    /// A WebSocket error (handshake, framing, closed connection).
    WebSocket(String),
    /// A message that does not parse.
    Protocol(DecodeError),
    /// The server refused the document.
    Refused {
        /// Why.
        status: Status,
        /// The server's words.
        message: String,
    },
    /// A bad address or option.
    Config(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Weft(e) => write!(f, "{e}"),
            Error::Store(e) => write!(f, "store: {e}"),
            Error::OpTooLarge { bytes, limit } => write!(
                f,
                "an op of {bytes} bytes is larger than the {limit}-byte message limit"
            ),
            Error::Io(e) => write!(f, "{e}"),
            Error::WebSocket(e) => write!(f, "WebSocket: {e}"),
            Error::Protocol(e) => write!(f, "{e}"),
            Error::Refused { status, message } => write!(f, "refused ({status}): {message}"),
            Error::Config(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<weft::Error> for Error {
    fn from(e: weft::Error) -> Self {
        Error::Weft(e)
    }
}

impl From<weft_store::Error> for Error {
    fn from(e: weft_store::Error) -> Self {
        Error::Store(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<tokio_tungstenite::tungstenite::Error> for Error {
    fn from(e: tokio_tungstenite::tungstenite::Error) -> Self {
        Error::WebSocket(e.to_string())
    }
}

/// A result of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
