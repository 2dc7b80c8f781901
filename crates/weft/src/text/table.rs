//! [`TextTable`]: a document's texts, found by name.

use std::collections::HashMap;

use super::TextState;

/// Texts below this count are found by a linear scan (cheaper than
/// hashing the name on every `Doc::text` call).
const SCAN_MAX: usize = 8;

/// The texts of a document, indexed by creation order and by name.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextTable {
    states: Vec<TextState>,
    by_name: HashMap<Box<str>, u32>,
}

impl TextTable {
    /// Index of the text called `name`.
    #[inline]
    pub fn find(&self, name: &str) -> Option<usize> {
        if self.states.len() <= SCAN_MAX {
            self.states.iter().position(|t| t.name() == name)
        } else {
            self.by_name.get(name).map(|&i| i as usize)
        }
    }

    /// Index of the text called `name`, created empty if missing.
    pub fn find_or_create(&mut self, name: &str) -> usize {
        match self.find(name) {
            Some(i) => i,
            None => {
                let i = self.states.len();
                self.by_name.insert(name.into(), i as u32);
                self.states.push(TextState::new(name));
                i
            }
        }
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn get(&self, i: usize) -> Option<&TextState> {
        self.states.get(i)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut TextState> {
        self.states.get_mut(i)
    }

    pub fn iter(&self) -> impl Iterator<Item = &TextState> + '_ {
        self.states.iter()
    }
}
