//! [`TextTable`]: a document's texts, found by name.

use std::collections::HashMap;

use crate::id::TextIdx;
use crate::oplog::PublicNames;

use super::TextState;

/// Texts below this count are found by a linear scan (cheaper than
/// hashing the name on every `Doc::text` call).
const SCAN_MAX: usize = 8;

/// The texts of a document, indexed by creation order and by name.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextTable {
    states: Vec<TextState>,
    by_name: HashMap<Box<str>, TextIdx>,
    /// Whether a name starts with U+0001 (a deleted text's incarnation,
    /// see `doc/containers.rs`).
    reserved: bool,
    /// The public names of the texts.
    public: PublicNames,
}

impl TextTable {
    /// Index of the text called `name`.
    #[inline]
    pub fn find(&self, name: &str) -> Option<TextIdx> {
        if self.states.len() <= SCAN_MAX {
            self.states
                .iter()
                .position(|t| t.name() == name)
                .map(|i| TextIdx::new(i as u32))
        } else {
            self.by_name.get(name).copied()
        }
    }

    /// Index of the text called `name`, created empty if missing.
    pub fn find_or_create(&mut self, name: &str) -> TextIdx {
        match self.find(name) {
            Some(i) => i,
            None => {
                let i = TextIdx::new(self.states.len() as u32);
                self.reserved |= crate::oplog::is_reserved(name);
                self.by_name.insert(name.into(), i);
                self.public.add(name);
                self.states.push(TextState::new(name));
                i
            }
        }
    }

    /// Whether some text's name starts with U+0001.
    #[inline]
    pub fn has_reserved(&self) -> bool {
        self.reserved
    }

    /// The distinct public names of the texts.
    pub fn public_names(&self) -> &PublicNames {
        &self.public
    }

    /// Number of texts.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Text `i`, if there is one.
    pub fn get(&self, i: TextIdx) -> Option<&TextState> {
        self.states.get(i.as_usize())
    }

    /// Text `i`, if there is one, for editing.
    pub fn get_mut(&mut self, i: TextIdx) -> Option<&mut TextState> {
        self.states.get_mut(i.as_usize())
    }

    /// The texts, by index.
    pub fn iter(&self) -> impl Iterator<Item = &TextState> + '_ {
        self.states.iter()
    }

    /// The texts, by index, for editing.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut TextState> + '_ {
        self.states.iter_mut()
    }
}
