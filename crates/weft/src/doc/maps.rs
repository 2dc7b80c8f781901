//! The document's maps: [`Doc::map`], [`Doc::get_map`], [`Doc::map_names`].

use crate::error::{Error, Result};
use crate::map::{Map, MapRef};

use super::containers::{self, Kind};
use super::Doc;
use crate::oplog::public_name;

impl Doc {
    /// The map called `name`, created empty if the document has none yet
    /// (see [`Map`]). A lazily imported snapshot loads first (see
    /// [`Doc::load`]); if it cannot, every write through the handle
    /// returns the error. After [`Doc::delete_map`], the name starts a
    /// new map.
    ///
    /// Names starting with U+0001 are reserved (see
    /// [`Doc::delete_text`]): every write through such a handle returns
    /// [`Error::ReservedKey`].
    pub fn map(&mut self, name: &str) -> Map<'_> {
        let broken = if crate::oplog::is_reserved(name) {
            Some(Error::ReservedKey(name.to_owned()))
        } else {
            self.load().err()
        };
        let map = if self.log.map_names().register(1).is_none() {
            self.log.intern_map(name)
        } else {
            let raw = containers::resolve(&self.log, &self.maps, Kind::Map, name).into_owned();
            self.log.intern_map(&raw)
        };
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
    /// ever wrote it and [`Doc::map`] never named it (or it was deleted
    /// since: see [`Doc::delete_map`]).
    pub fn get_map(&self, name: &str) -> Option<MapRef<'_>> {
        // A snapshot with maps loads at import, so a document that is
        // still lazy has none: nothing to load here.
        let i = self.shown_map(name)?;
        let name = public_name(self.log.map_names().name(i));
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

    /// The names of the document's maps, in the order it first saw them
    /// (deleted ones left out: see [`Doc::delete_map`]).
    pub fn map_names(&self) -> impl Iterator<Item = &str> + '_ {
        let names = self.log.map_names();
        if !names.has_reserved() {
            // No register, no reserved names: every map shows.
            return names.iter().collect::<Vec<_>>().into_iter();
        }
        let shown = self.shown_names(Kind::Map, names.public_names(), |raw| {
            names.find(raw).map(|i| i.as_usize())
        });
        shown.into_iter()
    }
}
