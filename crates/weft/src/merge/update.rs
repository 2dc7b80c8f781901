//! [`Update`]: ops received from another peer, decoded but not yet checked
//! against a document. Every reference is an [`OpId`] (a seq only exists
//! inside one document); [`super::plan()`] resolves them.

use std::ops::Range;

use smallvec::SmallVec;

use crate::id::{Counter, OpId, PeerId};
use crate::style::{ExpandType, Value};

/// A decoded update, validated for structure but not yet against a
/// document. Owns its data so it can wait in the pending set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Update {
    pub texts: Vec<Box<str>>,
    pub changes: Vec<UpdateChange>,
    pub runs: Vec<UpdateRun>,
    /// The text of the inserts that carry content, concatenated.
    pub content: String,
}

/// One change of an [`Update`]; its ops are `runs[runs.start..runs.end]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UpdateChange {
    pub peer: PeerId,
    pub counter: Counter,
    pub len: u32,
    pub deps: SmallVec<[OpId; 2]>,
    pub runs: Range<usize>,
}

/// A run of ops of an [`Update`], with every reference spelled as an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UpdateRun {
    pub len: u32,
    /// Index into [`Update::texts`].
    pub text: u32,
    pub kind: UpdateKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UpdateKind {
    Insert {
        left: Option<OpId>,
        right: Option<OpId>,
        /// Byte range in [`Update::content`]; `None` when the exporter left
        /// the text out (the chars are deleted by the same update).
        content: Option<Range<usize>>,
    },
    Delete {
        target: OpId,
        reversed: bool,
    },
    /// The start anchor of a mark, which carries what the mark sets.
    MarkStart {
        left: Option<OpId>,
        right: Option<OpId>,
        key: Box<str>,
        value: Value,
        expand: ExpandType,
    },
    /// The end anchor of the mark started by op `start`.
    MarkEnd {
        left: Option<OpId>,
        right: Option<OpId>,
        start: OpId,
    },
}

impl UpdateRun {
    /// The id targeted by op `offset` of a delete run.
    pub fn delete_target(&self, offset: u32) -> Option<OpId> {
        match &self.kind {
            UpdateKind::Delete { target, reversed } => Some(OpId::new(
                target.peer,
                if *reversed {
                    target.counter - offset
                } else {
                    target.counter + offset
                },
            )),
            _ => None,
        }
    }
}
