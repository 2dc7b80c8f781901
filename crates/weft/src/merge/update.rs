//! [`Update`]: ops received from another peer, decoded but not yet checked
//! against a document. Every reference is an [`OpId`] (a seq only exists
//! inside one document); [`super::plan()`] resolves them.

use std::collections::HashMap;
use std::ops::Range;

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::id::{Counter, OpId, PeerId, Seq, TextIdx, NO_SEQ};
use crate::oplog::{CommitInfo, Object, OpKind, OpLog, OpRun};
use crate::style::ExpandType;
use crate::text::{TextState, TextTable};
use crate::value::Value;
use crate::version::VersionVector;

/// A decoded update, validated for structure but not yet against a
/// document. Owns its data so it can wait in the pending set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Update {
    pub texts: Vec<Box<str>>,
    pub changes: Vec<UpdateChange>,
    pub runs: Vec<UpdateRun>,
    /// The text of the inserts that carry content, concatenated.
    pub content: String,
    /// What the marks started by the update set, in op order: kept apart
    /// so that runs own nothing (dropping them is free).
    pub marks: Vec<MarkSet>,
    /// Messages and timestamps of the commits its ops belong to.
    pub commits: Vec<CommitInfo>,
    /// What its map ops write, in op order (kept apart as marks are).
    pub map_sets: Vec<MapWrite>,
    /// Its embeds: inserts (of one U+FFFC char) holding a value, by id.
    pub embeds: Vec<(OpId, Object)>,
}

/// What a map op of an [`Update`] writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapWrite {
    pub map: Box<str>,
    pub key: Box<str>,
    /// `None`: deletes the key.
    pub value: Option<Value>,
}

/// What a mark started by an [`Update`] sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MarkSet {
    pub key: Box<str>,
    pub value: Value,
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

impl UpdateChange {
    /// The op this change waits for when `known(peer)` ops of each peer
    /// are known and it still brings some of its own: the op before its
    /// first when it does not continue its peer's known ops (that last
    /// op, not the first one lacking: until it is known the change cannot
    /// apply, and then all before it are); when it starts right there,
    /// its first dependency not known. `None`: it can apply now.
    #[inline]
    pub fn waits_for(&self, known: impl Fn(PeerId) -> Counter) -> Option<OpId> {
        let start = known(self.peer);
        if self.counter > start {
            Some(OpId::new(self.peer, self.counter - 1))
        } else if self.counter == start {
            self.deps
                .iter()
                .find(|d| known(d.peer) <= d.counter)
                .copied()
        } else {
            None
        }
    }
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
    /// The start anchor of a mark; what the mark sets is
    /// [`Update::marks`]`[mark]`.
    MarkStart {
        left: Option<OpId>,
        right: Option<OpId>,
        mark: u32,
        expand: ExpandType,
    },
    /// The end anchor of the mark started by op `start`.
    MarkEnd {
        left: Option<OpId>,
        right: Option<OpId>,
        start: OpId,
    },
    /// A map write: [`Update::map_sets`]`[set]`. Always one op.
    MapSet {
        set: u32,
    },
    /// Op `i` of the run cancels op `target.counter + i` of `target.peer`
    /// (the run's own peer; see [`crate::oplog::OpKind::Cancel`]).
    Cancel {
        target: OpId,
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

impl Update {
    /// Whether an insert of it carries no text (an older writer left out
    /// the text that a delete of the same update removes).
    pub fn leaves_out_text(&self) -> bool {
        self.runs
            .iter()
            .any(|r| matches!(r.kind, UpdateKind::Insert { content: None, .. }))
    }

    /// The update made of changes `changes` (indexes, in order) of this
    /// one; runs, content and marks are shared as they are (a change
    /// names its runs by index).
    pub fn subset(&self, changes: &[usize]) -> Update {
        Update {
            texts: self.texts.clone(),
            changes: changes
                .iter()
                .filter_map(|&i| self.changes.get(i).cloned())
                .collect(),
            runs: self.runs.clone(),
            content: self.content.clone(),
            marks: self.marks.clone(),
            map_sets: self.map_sets.clone(),
            embeds: self.embeds.clone(),
            commits: self.commits.clone(),
        }
    }

    /// The ops of `log` (its texts named through `texts`) that `from`
    /// lacks, and if `upto` is given that it has, as an update, without
    /// going through bytes: what merging a loaded snapshot into a live
    /// document or checking out a version takes. The same pieces as the
    /// bytes encoder writes ([`OpLog::missing_pieces`]).
    ///
    /// # Errors
    ///
    /// [`Error::TrimmedHistory`] if the ops include some a shallow
    /// document trimmed; [`Error::Internal`] if the log does not hold what
    /// its own ops name (a bug).
    pub fn from_log(
        log: &OpLog,
        texts: &TextTable,
        from: &VersionVector,
        upto: Option<&VersionVector>,
    ) -> Result<Update> {
        Update::from_pieces(log, texts, &log.missing_pieces(from, upto))
    }

    /// The ops `pieces` of `log` (change index and seqs within it, each
    /// piece after the pieces it depends on) as an update.
    ///
    /// # Errors
    ///
    /// As [`Update::from_log`].
    pub fn from_pieces(
        log: &OpLog,
        texts: &TextTable,
        pieces: &[(usize, Range<Seq>)],
    ) -> Result<Update> {
        log.check_pieces(pieces)?;
        let internal = |what| Error::Internal { what };
        let mut update = Update {
            texts: Vec::new(),
            changes: Vec::with_capacity(pieces.len()),
            runs: Vec::new(),
            content: String::new(),
            marks: Vec::new(),
            map_sets: Vec::new(),
            embeds: Vec::new(),
            commits: log.commit_infos_for(pieces).into_iter().cloned().collect(),
        };
        // The log's text indexes -> the update's.
        let mut text_index: HashMap<TextIdx, u32> = HashMap::new();
        for (ci, range) in pieces {
            let change = log.changes().get(*ci).ok_or(internal("change"))?;
            let peer = log.peers().get(change.peer);
            let counter = change.counter + (range.start - change.seq);
            // A suffix builds on its own previous op.
            let deps = if range.start > change.seq {
                smallvec::smallvec![OpId::new(peer, counter - 1)]
            } else {
                log.deps(change).iter().map(|&d| log.seq_to_id(d)).collect()
            };
            let first_run = update.runs.len();
            let mut failed = None;
            log.for_each_clipped_run(range, |run| {
                if matches!(run.kind, OpKind::Insert { .. }) && !log.objects().is_empty() {
                    for (&seq, value) in log.objects().range(run.seq..run.end()) {
                        update.embeds.push((log.seq_to_id(seq), value.clone()));
                    }
                }
                let text = match text_index.get(&run.text) {
                    // A map op edits no text.
                    _ if matches!(run.kind, OpKind::MapSet { .. }) => 0,
                    Some(&t) => t,
                    None => {
                        let name = texts.get(run.text).map_or("", TextState::name);
                        update.texts.push(name.into());
                        let t = (update.texts.len() - 1) as u32;
                        text_index.insert(run.text, t);
                        t
                    }
                };
                match run_kind(
                    log,
                    run,
                    &mut update.content,
                    &mut update.marks,
                    &mut update.map_sets,
                ) {
                    Some(kind) => update.runs.push(UpdateRun {
                        len: run.len,
                        text,
                        kind,
                    }),
                    None => failed = Some(internal("mark of a mark op")),
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
            update.changes.push(UpdateChange {
                peer,
                counter,
                len: range.end - range.start,
                deps,
                runs: first_run..update.runs.len(),
            });
        }
        Ok(update)
    }
}

/// `run` with every reference spelled as an id, its text (if any)
/// appended to `content`, what a mark it starts sets to `marks`. `None`
/// if a mark op names no mark.
fn run_kind(
    log: &OpLog,
    run: &OpRun,
    content: &mut String,
    marks: &mut Vec<MarkSet>,
    map_sets: &mut Vec<MapWrite>,
) -> Option<UpdateKind> {
    let id = |s: Seq| (s != NO_SEQ).then(|| log.seq_to_id(s));
    Some(match run.kind {
        OpKind::Insert {
            origin_left,
            origin_right,
            ..
        } => UpdateKind::Insert {
            left: id(origin_left),
            right: id(origin_right),
            content: run.content(log.content()).map(|s| {
                let start = content.len();
                content.push_str(s);
                start..content.len()
            }),
        },
        OpKind::Delete { target, reversed } => UpdateKind::Delete {
            target: log.seq_to_id(target),
            reversed,
        },
        OpKind::Cancel { target } => UpdateKind::Cancel {
            target: log.seq_to_id(target),
        },
        OpKind::MarkStart {
            origin_left,
            origin_right,
            mark,
        } => {
            let m = log.mark(mark)?;
            marks.push(MarkSet {
                key: log.keys().name(m.key).into(),
                value: m.value.clone(),
            });
            UpdateKind::MarkStart {
                left: id(origin_left),
                right: id(origin_right),
                mark: (marks.len() - 1) as u32,
                expand: m.expand,
            }
        }
        OpKind::MarkEnd {
            origin_left,
            origin_right,
            mark,
        } => UpdateKind::MarkEnd {
            left: id(origin_left),
            right: id(origin_right),
            start: log.seq_to_id(log.mark(mark)?.start),
        },
        OpKind::MapSet { set } => {
            let m = log.map_set(set)?;
            map_sets.push(MapWrite {
                map: log.map_names().name(m.map).into(),
                key: m.key.clone(),
                value: m.value.clone(),
            });
            UpdateKind::MapSet {
                set: (map_sets.len() - 1) as u32,
            }
        }
    })
}
