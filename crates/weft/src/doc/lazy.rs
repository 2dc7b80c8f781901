//! [`LazyDoc`]: a snapshot imported lazily, and what of it is loaded.
//!
//! The document owns this state machine; `encoding` only decodes. After a
//! lazy import the document answers its version and frontiers from the
//! snapshot's meta and reads each text from its stored copy (decompressed
//! once, on first read). The first operation that needs more (an edit,
//! a merge, an export, [`crate::Doc::load`]) loads the history into the op
//! log, and each text's tree is built when that text is first edited (or,
//! for a text with marks, when its handle is made). Once the history and
//! every tree are loaded the document drops the snapshot.
//!
//! Each step checks everything before changing anything: on error the
//! op log and the text are as they were.

use std::sync::{Arc, OnceLock};

use crate::encoding::{Loaded, Meta, Snapshot};
use crate::error::{Error, Result};
use crate::id::TextIdx;
use crate::oplog::OpLog;
use crate::text::{TextSource, TextState};

/// A document's view of a snapshot it imported lazily. See the module doc.
#[derive(Debug, Clone)]
pub(crate) struct LazyDoc {
    snap: Arc<Snapshot>,
    /// Each text's document-order text, decompressed on first read.
    texts: Arc<[OnceLock<Result<String>>]>,
    /// The document's text index of each snapshot text.
    doc_index: Vec<TextIdx>,
    /// Set once the history is in the op log.
    loaded: Option<Loaded>,
    /// Texts whose trees are not built yet.
    unbuilt: usize,
}

impl LazyDoc {
    pub fn new(snap: Snapshot, doc_index: Vec<TextIdx>) -> LazyDoc {
        let n = snap.meta.texts.len();
        LazyDoc {
            texts: (0..n).map(|_| OnceLock::new()).collect(),
            snap: Arc::new(snap),
            doc_index,
            loaded: None,
            unbuilt: n,
        }
    }

    /// What the snapshot says about the document before anything loads.
    pub fn meta(&self) -> &Meta {
        &self.snap.meta
    }

    /// Whether the history is in the op log.
    pub fn history_loaded(&self) -> bool {
        self.loaded.is_some()
    }

    /// Whether nothing is left to load (the document can drop this).
    pub fn is_done(&self) -> bool {
        self.loaded.is_some() && self.unbuilt == 0
    }

    /// The visible text of snapshot text `i`, in document order.
    pub fn text(&self, i: u32) -> Result<&str> {
        let cell = self.texts.get(i as usize).ok_or(Error::Malformed {
            offset: 0,
            what: "snapshot text index",
        })?;
        cell.get_or_init(|| self.snap.stored_text(i))
            .as_deref()
            .map_err(Clone::clone)
    }

    /// Decodes the history into `log` (which must be empty) unless it is
    /// there already. On error `log` is unchanged.
    pub fn load_history(&mut self, log: &mut OpLog) -> Result<()> {
        if self.loaded.is_some() {
            return Ok(());
        }
        let (new, loaded) = self.snap.load_history(|i| self.text(i), &self.doc_index)?;
        *log = new;
        self.loaded = Some(loaded);
        Ok(())
    }

    /// Builds `state`'s tree from the snapshot if it still waits for it
    /// (the history must be loaded). On error `state` is unchanged.
    pub fn build_text(&mut self, log: &OpLog, state: &mut TextState) -> Result<()> {
        let Some(unloaded) = state.unloaded() else {
            return Ok(());
        };
        let bad = Error::Malformed {
            offset: 0,
            what: "snapshot text index",
        };
        let loaded = self.loaded.as_ref().ok_or(bad.clone())?;
        let t = self
            .doc_index
            .get(unloaded.index as usize)
            .copied()
            .ok_or(bad)?;
        let items = self.snap.text_items(loaded, log, unloaded, t)?;
        state.install(items);
        self.unbuilt = self.unbuilt.saturating_sub(1);
        Ok(())
    }
}

impl TextSource for LazyDoc {
    fn stored_text(&self, index: u32) -> Result<&str> {
        self.text(index)
    }

    fn load_text(&mut self, log: &mut OpLog, state: &mut TextState) -> Result<()> {
        self.load_history(log)?;
        self.build_text(log, state)
    }
}
