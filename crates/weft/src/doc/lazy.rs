//! [`LazyDoc`]: a snapshot imported lazily, and what of it is loaded.
//!
//! The document owns this state machine; `encoding` only decodes. After a
//! lazy import the document answers its version and frontiers from the
//! snapshot's meta and reads each text from its stored copy (decompressed
//! once, on first read). Loading then goes in steps, each when an
//! operation first needs it:
//!
//! - the *head*: the change table and the texts, in the op log, with the
//!   history's op runs left out ([`OpLog::defer_ops`]). Local edits need
//!   no more: typing into a text without marks builds its tree from the
//!   snapshot's segments alone, its chars' origins left unknown;
//! - the *history*: its op runs (a merge, an export, marking, or
//!   [`crate::Doc::load`]), after which each text's tree is built from
//!   the history, or, if it was built before, has its origins filled in.
//!
//! A text with marks reads its styles from the snapshot too, when it
//! stores them (format version 5, see [`StoredStyles`]); older snapshots
//! need the history for that.
//!
//! Once the history and every tree are complete the document drops the
//! snapshot.
//!
//! Each step checks everything before changing anything: on error the
//! op log and the text are as they were.

use std::sync::{Arc, OnceLock};

use crate::encoding::{Head, Loaded, Meta, Snapshot};
use crate::error::{Error, Result};
use crate::id::TextIdx;
use crate::oplog::OpLog;
use crate::text::{Need, StoredStyles, TextSource, TextState};

/// A document's view of a snapshot it imported lazily. See the module doc.
#[derive(Debug, Clone)]
pub(crate) struct LazyDoc {
    snap: Arc<Snapshot>,
    /// Each text's document-order text, decompressed on first read
    /// (empty once the head is loaded: the texts are in the log then).
    texts: Arc<[OnceLock<Result<String>>]>,
    /// Each text's stored styles (format version 5), decoded on first
    /// read of a text with marks: `None` when the snapshot has none for
    /// it or they do not decode (reading its styles then needs the
    /// history).
    styles: Arc<[OnceLock<Option<StoredStyles>>]>,
    /// The document's text index of each snapshot text.
    doc_index: Vec<TextIdx>,
    /// Set once the change table and the texts are in the op log.
    head: Option<Head>,
    /// Set once the history's op runs are too.
    loaded: Option<Loaded>,
    /// Texts whose trees are not built yet.
    unbuilt: usize,
    /// Document indexes of the texts whose trees were built before the
    /// history loaded: their snapshot chars lack origins.
    unfilled: Vec<TextIdx>,
    /// The document fully loaded, for a read through `&Doc` that needs
    /// more than is loaded (see `Doc::loaded`); taken over by the
    /// document's next `&mut` operation (`Doc::settle`).
    pub full: OnceLock<Result<Box<super::Doc>>>,
}

impl LazyDoc {
    pub fn new(snap: Snapshot, doc_index: Vec<TextIdx>) -> LazyDoc {
        let n = snap.meta.texts.len();
        LazyDoc {
            texts: (0..n).map(|_| OnceLock::new()).collect(),
            styles: (0..n).map(|_| OnceLock::new()).collect(),
            snap: Arc::new(snap),
            doc_index,
            head: None,
            loaded: None,
            unbuilt: n,
            unfilled: Vec::new(),
            full: OnceLock::new(),
        }
    }

    /// What the snapshot says about the document before anything loads.
    pub fn meta(&self) -> &Meta {
        &self.snap.meta
    }

    /// Whether the change table is in the op log (so the log, not the
    /// meta, has the version: it may have local ops on top).
    pub fn head_loaded(&self) -> bool {
        self.head.is_some()
    }

    /// Whether nothing is left to load (the document can drop this).
    pub fn is_done(&self) -> bool {
        self.loaded.is_some() && self.unbuilt == 0 && self.unfilled.is_empty()
    }

    /// The visible text of snapshot text `i`, in document order: from
    /// `log` once the texts are there (see [`LazyDoc::head_loaded`]).
    pub fn text<'a>(&'a self, log: &'a OpLog, i: u32) -> Result<&'a str> {
        if let Some(head) = &self.head {
            let range = head.text_range(i as usize)?;
            return log.content().get(range).ok_or(Error::Inconsistent {
                what: "snapshot text",
            });
        }
        let cell = self.texts.get(i as usize).ok_or(Error::Inconsistent {
            what: "snapshot text index",
        })?;
        cell.get_or_init(|| self.snap.stored_text(i, 0))
            .as_deref()
            .map_err(Clone::clone)
    }

    /// The stored styles of snapshot text `i` (see [`StoredStyles`]), if
    /// the snapshot has them and they decode (a damaged entry is left to
    /// the history, which a read then loads).
    pub fn styles(&self, i: u32) -> Option<&StoredStyles> {
        self.styles
            .get(i as usize)?
            .get_or_init(|| self.snap.stored_styles(i).ok().flatten())
            .as_ref()
    }

    /// Decodes the change table and the texts into `log` (which must be
    /// empty) unless they are there already. On error `log` is unchanged.
    /// A text not read yet is decompressed straight into the log.
    fn load_head(&mut self, log: &mut OpLog) -> Result<()> {
        if self.head.is_none() {
            let read = |i: u32| match self.texts.get(i as usize).and_then(OnceLock::get) {
                Some(Ok(text)) => Some(text.as_str()),
                _ => None,
            };
            let (new, head) = self.snap.load_head(read)?;
            *log = new;
            self.head = Some(head);
            // The texts are read from the log from now on: drop the
            // copies read before (unless a fork still shares them).
            self.texts = Arc::from(Vec::new());
        }
        Ok(())
    }

    /// Loads the head and then the history's op runs into `log` unless
    /// they are there already. On error `log` is unchanged.
    pub fn load_history(&mut self, log: &mut OpLog) -> Result<()> {
        self.load_head(log)?;
        if self.loaded.is_some() {
            return Ok(());
        }
        let head = self.head.as_ref().expect("loaded above");
        self.loaded = Some(self.snap.load_history(log, head, &self.doc_index)?);
        for info in &self.snap.commits {
            log.add_loaded_commit_info(info);
        }
        Ok(())
    }

    /// Finishes text `t`'s tree once the history is loaded: builds it
    /// from the snapshot if it still waits for it, or fills in the
    /// origins of one built before the history. On error `state` is
    /// unchanged.
    pub fn finish_text(&mut self, log: &OpLog, state: &mut TextState, t: TextIdx) -> Result<()> {
        let bad = Error::Inconsistent {
            what: "snapshot text index",
        };
        let (Some(head), Some(loaded)) = (&self.head, &self.loaded) else {
            return Err(bad);
        };
        if let Some(unloaded) = state.unloaded() {
            if self.doc_index.get(unloaded.index as usize) != Some(&t) {
                return Err(bad);
            }
            let items = self.snap.text_items((head, loaded), log, unloaded, t)?;
            state.install(items);
            self.unbuilt = self.unbuilt.saturating_sub(1);
        } else if let Some(k) = self.unfilled.iter().position(|&u| u == t) {
            let items = self
                .snap
                .fill_origins(loaded, log, t, state.items().copied())?;
            state.install(items);
            self.unfilled.swap_remove(k);
        }
        Ok(())
    }

    /// Builds text `t`'s tree before the history, for local edits (see
    /// [`Snapshot::plain_items`]). On error `state` is unchanged.
    fn build_plain(&mut self, log: &mut OpLog, state: &mut TextState, t: TextIdx) -> Result<()> {
        self.load_head(log)?;
        let Some(unloaded) = state.unloaded() else {
            return Ok(());
        };
        let head = self.head.as_ref().expect("loaded above");
        let built = self.snap.plain_items(head, log, unloaded)?;
        state.install_built(built);
        self.unbuilt = self.unbuilt.saturating_sub(1);
        self.unfilled.push(t);
        Ok(())
    }
}

impl TextSource for LazyDoc {
    fn stored_text<'a>(&'a self, log: &'a OpLog, index: u32) -> Result<&'a str> {
        self.text(log, index)
    }

    fn stored_styles(&self, index: u32) -> Option<&StoredStyles> {
        self.styles(index)
    }

    fn load_text(
        &mut self,
        log: &mut OpLog,
        state: &mut TextState,
        text: TextIdx,
        need: Need,
    ) -> Result<()> {
        let plain = state.unloaded().is_none_or(|u| u.counts.anchors == 0);
        if need == Need::Typing && plain && self.loaded.is_none() {
            return self.build_plain(log, state, text);
        }
        self.load_history(log)?;
        self.finish_text(log, state, text)
    }
}
