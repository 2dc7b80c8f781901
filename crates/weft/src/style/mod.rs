//! Rich text: style values, expand rules and Quill-style deltas.
//!
//! A **mark** gives a key (`bold`, `link`, `comment:42`) a [`Value`] over a
//! range of a text ([`crate::Text::mark`]). It is stored as two zero-width
//! *anchors* in the same sequence as the chars, so it follows its text
//! through concurrent edits. Where each anchor sits is decided by the
//! mark's [`ExpandType`]:
//!
//! | expand   | start anchor                   | end anchor                     |
//! |----------|--------------------------------|--------------------------------|
//! | `After`  | sticks to the first char       | sticks to the char after       |
//! | `None`   | sticks to the first char       | sticks to the last char        |
//! | `Before` | sticks to the char before      | sticks to the last char        |
//! | `Both`   | sticks to the char before      | sticks to the char after       |
//!
//! "Sticks to the char after" means: text typed at that edge, locally or
//! by a concurrent peer, lands *inside* the mark (bold grows as you type at
//! its end); "sticks to the last char" means it lands outside (a link does
//! not). The rule is part of the op, so every peer places concurrent text
//! the same way whatever the peer ids are.
//!
//! When several marks give one key a value at a char, the one made last
//! wins (largest Lamport timestamp, then peer id); a [`Value::Null`] winner
//! (an unmark) means the key is absent. Keys are independent, so
//! overlapping comments by several people use distinct keys
//! (`comment:<id>`) and all survive.

pub use crate::value::Value;

use std::borrow::Cow;
use std::collections::BTreeMap;

/// Style keys and their values at some text, sorted by key. Never holds a
/// [`Value::Null`] when returned by Weft.
pub type Attributes = BTreeMap<String, Value>;

/// Whether text typed at the edges of a mark joins it. See the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ExpandType {
    /// Text typed at the end joins the mark (bold, italic, underline).
    After,
    /// Text typed at the start joins the mark.
    Before,
    /// Text typed at either edge joins the mark.
    Both,
    /// Text typed at either edge stays outside (link, comment, code).
    None,
}

impl ExpandType {
    /// Whether text typed right before the first char joins the mark.
    pub fn expands_before(self) -> bool {
        matches!(self, ExpandType::Before | ExpandType::Both)
    }

    /// Whether text typed right after the last char joins the mark.
    pub fn expands_after(self) -> bool {
        matches!(self, ExpandType::After | ExpandType::Both)
    }

    /// Whether a mark's start (`end` false) or end anchor under this rule
    /// is glued to the char before it (else to the char after it): a
    /// start sticks left when the mark expands before, an end when it
    /// does not expand after. The one place that rule is written.
    pub(crate) fn anchor_sticks_left(self, end: bool) -> bool {
        if end {
            !self.expands_after()
        } else {
            self.expands_before()
        }
    }

    pub(crate) fn to_byte(self) -> u8 {
        match self {
            ExpandType::After => 0,
            ExpandType::Before => 1,
            ExpandType::Both => 2,
            ExpandType::None => 3,
        }
    }

    pub(crate) fn from_byte(b: u8) -> Option<ExpandType> {
        Some(match b {
            0 => ExpandType::After,
            1 => ExpandType::Before,
            2 => ExpandType::Both,
            3 => ExpandType::None,
            _ => return None,
        })
    }
}

/// The expand rule of each style key, set once per document with
/// [`crate::Doc::config_text_style`].
///
/// A key is looked up exactly, then by its prefix up to the first `:` (so
/// `comment:42` follows `comment`), then falls back to the config's default
/// rule, which is [`ExpandType::After`] unless set otherwise. The rule in
/// force when a mark is made travels with it: peers with different configs
/// still converge.
///
/// The default config: `bold`, `italic`, `underline`, `strike`,
/// `highlight`, `color`, `background`, `font`, `size` expand `After`;
/// `link`, `comment`, `code` expand `None`.
///
/// # Examples
///
/// ```
/// use weft::{ExpandType, StyleConfig};
///
/// let mut config = StyleConfig::default();
/// config.set("mention", ExpandType::None);
/// assert_eq!(config.get("bold"), ExpandType::After);
/// assert_eq!(config.get("comment:7"), ExpandType::None);
/// assert_eq!(config.get("mention"), ExpandType::None);
/// assert_eq!(config.get("unknown"), ExpandType::After);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StyleConfig {
    /// Borrowed for the default rules, so that a new document (which
    /// takes [`StyleConfig::default`]) allocates no key.
    rules: BTreeMap<Cow<'static, str>, ExpandType>,
    default: ExpandType,
}

impl Default for StyleConfig {
    fn default() -> Self {
        let mut config = StyleConfig::empty();
        for key in [
            "bold",
            "italic",
            "underline",
            "strike",
            "highlight",
            "color",
            "background",
            "font",
            "size",
        ] {
            config.rules.insert(Cow::Borrowed(key), ExpandType::After);
        }
        for key in ["link", "comment", "code"] {
            config.rules.insert(Cow::Borrowed(key), ExpandType::None);
        }
        config
    }
}

impl StyleConfig {
    /// A config with no rules: every key expands [`ExpandType::After`].
    pub fn empty() -> StyleConfig {
        StyleConfig {
            rules: BTreeMap::new(),
            default: ExpandType::After,
        }
    }

    /// Sets the rule for `key` (or for every `key:<suffix>`).
    pub fn set(&mut self, key: &str, expand: ExpandType) -> &mut Self {
        self.rules.insert(Cow::Owned(key.to_owned()), expand);
        self
    }

    /// Sets the rule for keys without one.
    pub fn set_default(&mut self, expand: ExpandType) -> &mut Self {
        self.default = expand;
        self
    }

    /// The rule for `key`: exact match, then the prefix before the first
    /// `:`, then the default.
    pub fn get(&self, key: &str) -> ExpandType {
        if let Some(&e) = self.rules.get(key) {
            return e;
        }
        if let Some((prefix, _)) = key.split_once(':') {
            if let Some(&e) = self.rules.get(prefix) {
                return e;
            }
        }
        self.default
    }
}

/// One step of a Quill-style delta over a text, in chars.
///
/// [`crate::Text::to_delta`] returns only [`Delta::Insert`]s,
/// [`Delta::Embed`]s and [`Delta::Block`]s: the text as runs of equal
/// attributes, each embed and block marker on its own.
/// [`crate::Text::apply_delta`] reads every kind. With the `serde` feature
/// a delta serializes as Quill's JSON (`{"insert": "Hi", "attributes":
/// {"bold": true}}`, `{"retain": 3}`, `{"delete": 2}`, `{"insert":
/// {"image": "cat.png"}}`), omitting empty attributes; a block marker is
/// Quill's line end, `{"insert": "\n", "attributes": {"header": 1}}`,
/// always with `attributes` (so `{"insert": "\n", "attributes": {}}` is
/// a marker without attributes). A lone `"\n"` with attributes reads as
/// a block marker, as Quill means it: a newline char of the text that
/// carries styles its neighbours lack (typing Enter in bold text) is
/// written the same way, and comes back from JSON as a marker. Editors
/// that send deltas as JSON should use block markers for lines (as Quill
/// does) rather than style newline chars.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(from = "repr::DeltaRepr", into = "repr::DeltaRepr")
)]
#[non_exhaustive]
pub enum Delta {
    /// Text with exactly these attributes (inherited styles not listed are
    /// removed from it).
    Insert {
        /// The text.
        insert: String,
        /// Its styles; `Null` values are ignored.
        attributes: Attributes,
    },
    /// Skips `retain` chars, setting the given attributes on them (`Null`
    /// removes a key); keys not listed are left alone.
    Retain {
        /// Number of chars.
        retain: usize,
        /// Styles to set (`Null`: remove).
        attributes: Attributes,
    },
    /// Deletes `delete` chars.
    Delete {
        /// Number of chars.
        delete: usize,
    },
    /// An embed (an image, a mention: see [`crate::Text::insert_embed`])
    /// with these attributes. It takes one position: one char, one UTF-16
    /// unit, and the 3 UTF-8 bytes of U+FFFC, the char
    /// `Text::to_string` shows it as. As JSON, Quill's embed:
    /// `{"insert": {"image": "cat.png"}}`. Give embeds map values, as
    /// Quill does: an embed of a string serializes as Quill's text JSON
    /// (`{"insert": "@ann"}`) and reads back as text.
    Embed {
        /// What is embedded.
        insert: Value,
        /// Its styles; `Null` values are ignored.
        attributes: Attributes,
    },
    /// A block marker (see [`crate::Text::split_block`]): the end of a
    /// block (a paragraph, a heading, a list item), carrying the block's
    /// attributes, as Quill's `"\n"` carries its line's format. It takes
    /// one position, like an embed (one char, one UTF-16 unit, 3 UTF-8
    /// bytes: `Text::to_string` shows it as U+FFFC). In a change delta a
    /// retain with attributes over a marker changes its block attributes.
    Block {
        /// The block's attributes (`Null` values are ignored).
        attributes: Attributes,
    },
}

impl Delta {
    /// An insert of `text` with no attributes.
    pub fn insert(text: impl Into<String>) -> Delta {
        Delta::Insert {
            insert: text.into(),
            attributes: Attributes::new(),
        }
    }

    /// An insert of `text` with `attributes`.
    pub fn insert_with<K: Into<String>, V: Into<Value>>(
        text: impl Into<String>,
        attributes: impl IntoIterator<Item = (K, V)>,
    ) -> Delta {
        Delta::Insert {
            insert: text.into(),
            attributes: attrs(attributes),
        }
    }

    /// A retain of `n` chars, changing no attributes.
    pub fn retain(n: usize) -> Delta {
        Delta::Retain {
            retain: n,
            attributes: Attributes::new(),
        }
    }

    /// A retain of `n` chars that sets `attributes` (`Null` removes).
    pub fn retain_with<K: Into<String>, V: Into<Value>>(
        n: usize,
        attributes: impl IntoIterator<Item = (K, V)>,
    ) -> Delta {
        Delta::Retain {
            retain: n,
            attributes: attrs(attributes),
        }
    }

    /// A delete of `n` chars.
    pub fn delete(n: usize) -> Delta {
        Delta::Delete { delete: n }
    }

    /// An embed of `value` with no attributes.
    pub fn embed(value: impl Into<Value>) -> Delta {
        Delta::Embed {
            insert: value.into(),
            attributes: Attributes::new(),
        }
    }

    /// A block marker with `attributes`.
    pub fn block<K: Into<String>, V: Into<Value>>(
        attributes: impl IntoIterator<Item = (K, V)>,
    ) -> Delta {
        Delta::Block {
            attributes: attrs(attributes),
        }
    }
}

/// The JSON form of a delta: Quill's, through a plain untagged enum.
#[cfg(feature = "serde")]
mod repr {
    use super::{Attributes, Delta, Value};

    fn is_empty(a: &Option<Attributes>) -> bool {
        a.as_ref().is_none_or(Attributes::is_empty)
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(untagged)]
    pub(super) enum DeltaRepr {
        Text {
            insert: String,
            #[serde(default, skip_serializing_if = "is_empty")]
            attributes: Option<Attributes>,
        },
        Retain {
            retain: usize,
            #[serde(default, skip_serializing_if = "is_empty")]
            attributes: Option<Attributes>,
        },
        Delete {
            delete: usize,
        },
        Embed {
            insert: Value,
            #[serde(default, skip_serializing_if = "is_empty")]
            attributes: Option<Attributes>,
        },
        /// A block marker: `attributes` is written even when empty.
        Line {
            insert: String,
            attributes: Attributes,
        },
    }

    impl From<DeltaRepr> for Delta {
        fn from(r: DeltaRepr) -> Delta {
            match r {
                DeltaRepr::Text {
                    insert,
                    attributes: Some(attributes),
                } if insert == "\n" => Delta::Block { attributes },
                DeltaRepr::Text { insert, attributes } => Delta::Insert {
                    insert,
                    attributes: attributes.unwrap_or_default(),
                },
                DeltaRepr::Line { insert, attributes } if insert == "\n" => {
                    Delta::Block { attributes }
                }
                DeltaRepr::Line { insert, attributes } => Delta::Insert { insert, attributes },
                DeltaRepr::Retain { retain, attributes } => Delta::Retain {
                    retain,
                    attributes: attributes.unwrap_or_default(),
                },
                DeltaRepr::Delete { delete } => Delta::Delete { delete },
                DeltaRepr::Embed { insert, attributes } => Delta::Embed {
                    insert,
                    attributes: attributes.unwrap_or_default(),
                },
            }
        }
    }

    impl From<Delta> for DeltaRepr {
        fn from(d: Delta) -> DeltaRepr {
            let some = |a: Attributes| (!a.is_empty()).then_some(a);
            match d {
                Delta::Insert { insert, attributes } => DeltaRepr::Text {
                    insert,
                    attributes: some(attributes),
                },
                Delta::Retain { retain, attributes } => DeltaRepr::Retain {
                    retain,
                    attributes: some(attributes),
                },
                Delta::Delete { delete } => DeltaRepr::Delete { delete },
                Delta::Embed { insert, attributes } => DeltaRepr::Embed {
                    insert,
                    attributes: some(attributes),
                },
                Delta::Block { attributes } => DeltaRepr::Line {
                    insert: "\n".to_owned(),
                    attributes,
                },
            }
        }
    }
}

/// Key-value pairs as attributes.
pub(crate) fn attrs<K: Into<String>, V: Into<Value>>(
    it: impl IntoIterator<Item = (K, V)>,
) -> Attributes {
    it.into_iter().map(|(k, v)| (k.into(), v.into())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lookup_order() {
        let mut c = StyleConfig::empty();
        c.set("comment", ExpandType::None)
            .set("comment:special", ExpandType::Both)
            .set_default(ExpandType::Before);
        assert_eq!(c.get("comment:1"), ExpandType::None);
        assert_eq!(c.get("comment:special"), ExpandType::Both);
        assert_eq!(c.get("x"), ExpandType::Before);
        assert_eq!(c.get("x:y"), ExpandType::Before);
    }

    #[test]
    fn expand_bytes_round_trip() {
        for e in [
            ExpandType::After,
            ExpandType::Before,
            ExpandType::Both,
            ExpandType::None,
        ] {
            assert_eq!(ExpandType::from_byte(e.to_byte()), Some(e));
        }
        assert_eq!(ExpandType::from_byte(4), None);
    }
}
