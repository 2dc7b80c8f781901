//! Integrating remote changes into a document.
//!
//! An [`Update`] (decoded from bytes by `encoding`, or taken from another
//! document's history) goes through [`plan()`], which reads the document
//! without changing it: readiness (are the ops it builds on known?),
//! deduplication (ops the document has are skipped), and every reference
//! resolved and checked. Only a plan that passed reaches [`apply()`], which
//! cannot fail, so a rejected update leaves the document as it was. An
//! update that is not ready waits in [`Pending`], indexed by the op it
//! waits for, and is retried only when that op arrives.

mod apply;
mod bits;
mod events;
mod linear;
mod pending;
mod plan;
mod update;

pub(crate) use apply::apply;
pub(crate) use pending::{missing_spans, unknown_part, Parked, Pending, Waiting, WHOLE};
pub(crate) use plan::{missing_parts, plan, plan_parts, ready_changes, Readiness};
pub(crate) use update::{MapWrite, MarkSet, Update, UpdateChange, UpdateKind, UpdateRun};
