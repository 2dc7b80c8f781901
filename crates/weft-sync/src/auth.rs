//! The authorisation hook: which token may do what with which document.

use std::collections::HashMap;
use std::path::Path;

use crate::protocol::Access;
use crate::{Error, Result};

/// Decides what a token may do with a document. Called on every join.
pub trait Authorize: Send + Sync + 'static {
    /// What `token` may do with document `doc`.
    fn access(&self, token: &str, doc: &str) -> Access;
}

/// Everyone may write everything (for development and tests on loopback).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl Authorize for AllowAll {
    fn access(&self, _token: &str, _doc: &str) -> Access {
        Access::Write
    }
}

/// Tokens read from a file, one per line: `TOKEN ACCESS [DOC_PREFIX]`,
/// where ACCESS is `read` or `write` and the optional prefix limits the
/// token to documents whose id starts with it; `#` starts a comment.
/// Unknown tokens get [`Access::None`].
///
/// # Examples
///
/// ```
/// use weft_sync::{Access, Authorize, TokenFile};
///
/// let tokens = TokenFile::parse("alice write\nbob read notes/\n# comment\n")?;
/// assert_eq!(tokens.access("alice", "x"), Access::Write);
/// assert_eq!(tokens.access("bob", "notes/1"), Access::Read);
/// assert_eq!(tokens.access("bob", "other"), Access::None);
/// assert_eq!(tokens.access("eve", "x"), Access::None);
/// # Ok::<(), weft_sync::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct TokenFile {
    tokens: HashMap<String, Vec<(Access, String)>>,
}

impl TokenFile {
    /// Reads the file at `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if it cannot be read, [`Error::Config`] for a bad line.
    pub fn read(path: impl AsRef<Path>) -> Result<TokenFile> {
        TokenFile::parse(&std::fs::read_to_string(path)?)
    }

    /// Parses the text of a token file.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming the first bad line.
    pub fn parse(text: &str) -> Result<TokenFile> {
        let mut tokens: HashMap<String, Vec<(Access, String)>> = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let (token, access, prefix) = match words[..] {
                [t, a] => (t, a, ""),
                [t, a, p] => (t, a, p),
                _ => {
                    return Err(Error::Config(format!(
                        "token file line {}: expected `TOKEN read|write [DOC_PREFIX]`",
                        i + 1
                    )))
                }
            };
            let access = match access {
                "read" => Access::Read,
                "write" => Access::Write,
                other => {
                    return Err(Error::Config(format!(
                        "token file line {}: unknown access {other:?} (read or write)",
                        i + 1
                    )))
                }
            };
            tokens
                .entry(token.to_owned())
                .or_default()
                .push((access, prefix.to_owned()));
        }
        Ok(TokenFile { tokens })
    }
}

impl Authorize for TokenFile {
    fn access(&self, token: &str, doc: &str) -> Access {
        self.tokens
            .get(token)
            .into_iter()
            .flatten()
            .filter(|(_, prefix)| doc.starts_with(prefix.as_str()))
            .map(|(a, _)| *a)
            .max()
            .unwrap_or(Access::None)
    }
}
