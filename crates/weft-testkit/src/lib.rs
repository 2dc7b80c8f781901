//! Weft's test harness, shared by the integration tests of `crates/weft`
//! and the cargo-fuzz targets in `fuzz/` (not published, not a stable
//! API). It uses only Weft's public API, the doc-hidden checks included
//! (`Doc::assert_invariants`, `Doc::assert_exports_reopen`,
//! `Doc::history_runs`).
//!
//! - The action model ([`Action`]): one step of a fuzzed session, built
//!   from bytes by [`arbitrary`] (the fuzz targets) or from a seed
//!   ([`random_actions`], the tests).
//! - The one random multi-peer driver, [`drive`]: peers run actions and
//!   sync through every delivery a network makes (pending, stale, future,
//!   duplicated, whole histories, op ranges, snapshots into live
//!   documents, damaged bytes) and undo and redo with an `UndoManager`
//!   each (checked against a model of its stacks); whenever what a
//!   replica holds changes it must equal the reference model ([`RefDoc`],
//!   cancels included, brought to the replica's version from a pool of
//!   every op made) and its event [`Mirror`]; at
//!   the end all hold the same text, deltas, maps, versions and history,
//!   and the versions they held show again through the history API (see
//!   [`Checks`]). [`run_converge`] is the fuzz target's entry;
//!   [`Random`] runs it on seeds with the actions, peers and steps a test
//!   needs (`WEFT_STRESS_SEEDS=n` adds n seeds) and returns [`Stats`].
//!   [`undo_all`] runs it, then has one peer undo and redo every step.
//! - The other fuzz questions: [`run_text_vs_string`] (one document
//!   against a `String`), [`run_import`] (hostile bytes imported) and
//!   [`run_small_decode`] (versions, cursors and presence messages).
//! - What history tests share: [`history`] (diffs applied to a mirror,
//!   commit messages per op).
//! - Helpers: documents ([`doc`], [`styled_doc`]), [`sync`], [`full`],
//!   [`observe`], hand-built update bytes ([`wrap`], [`body`]), trace
//!   replay ([`replay`], [`Replica`]) and a seeded [`Rng`].
//!
//! Each `run_*` function answers one question and panics when the answer
//! is wrong; an `Err` that the input legitimately causes (a position inside
//! a char, bytes that are not an export) is not a failure.

mod action;
mod converge;
mod helpers;
pub mod history;
mod import;
mod mirror;
mod model;
mod network;
mod random;
mod rng;
mod small;
mod text_vs_string;
mod time_travel;
mod undo;

pub use action::{
    block_attrs, config, from_bytes, random_actions, Action, Payload, PosUnit, KEYS, MAP_KEYS,
    TEXTS,
};
pub use converge::{drive, run_converge, Checks};
pub use helpers::{
    body, doc, exchange, full, map_contents, observe, replay, section, styled_doc, sync, varint,
    wrap, Observed, Replica,
};
pub use import::{import_target, run_import};
pub use mirror::Mirror;
pub use model::{expand_of, MapsBack, RefDoc};
pub use random::{history_actions, random_actions_where, Random, Stats};
pub use rng::Rng;
pub use small::run_small_decode;
pub use text_vs_string::run_text_vs_string;
pub use undo::undo_all;
