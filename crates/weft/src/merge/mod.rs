//! Integrating remote changes into a document.
//!
//! An [`Update`] (decoded from bytes by `encoding`, or taken from another
//! document's history) enters through the [`Inbox`], once per import. It
//! goes through `plan`, which reads the document without changing it:
//! readiness (are the ops it builds on known?), deduplication (ops the
//! document has are skipped), and every reference resolved and checked
//! by the rules of `oplog::check`. Only a plan that passed reaches
//! `apply`, which cannot fail, so a rejected update leaves the document
//! as it was. An update that is not ready waits in [`Pending`], indexed
//! by the op it waits for, and the inbox retries it only when that op
//! arrives.

mod apply;
mod bits;
mod cancel;
mod deltas;
mod fast_forward;
mod inbox;
mod pending;
mod plan;
mod update;

pub(crate) use cancel::{cancel, show_flips};
pub(crate) use inbox::{park_snapshot_pending, Imported, Inbox};
pub(crate) use pending::{Parked, Pending};
pub(crate) use update::{MapWrite, MarkSet, Update, UpdateChange, UpdateKind, UpdateRun};
