//! The document's maps: [`Doc::map`], [`Doc::get_map`], [`Doc::map_names`].

use crate::error::Result;
use crate::map::{Map, MapRef};

use super::Doc;

impl Doc {
    /// The map called `name`, created empty if the document has none yet
    /// (see [`Map`]). A lazily imported snapshot loads first (see
    /// [`Doc::load`]); if it cannot, every write through the handle
    /// returns the error.
    pub fn map(&mut self, name: &str) -> Map<'_> {
        let broken = self.load().err();
        let map = self.log.intern_map(name);
        let draft = super::events::open_draft(&mut self.draft, &self.observers);
        Map::new(
            &mut self.log,
            self.maps.get_mut(map),
            map,
            self.peer,
            draft,
            broken,
        )
    }

    /// A read-only view of the map called `name`, or `None` if no op
    /// ever wrote it and [`Doc::map`] never named it.
    pub fn get_map(&self, name: &str) -> Option<MapRef<'_>> {
        // A snapshot with maps loads at import, so a document that is
        // still lazy has none: nothing to load here.
        let i = self.log.map_names().find(name)?;
        let name = self.log.map_names().name(i);
        Some(MapRef::new(name, self.maps.get(i)))
    }

    /// Loads a snapshot just imported lazily into this (empty) document
    /// when it has maps: they are read from the history. On error the
    /// document is empty again.
    pub(super) fn load_maps_at_import(&mut self) -> Result<()> {
        if let Err(e) = self.load() {
            *self = Doc {
                peer: self.peer,
                style: self.style.clone(),
                observers: std::mem::take(&mut self.observers),
                ..Doc::new()
            };
            return Err(e);
        }
        Ok(())
    }

    /// The names of the document's maps, in the order it first saw them.
    pub fn map_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.log.map_names().iter()
    }
}
