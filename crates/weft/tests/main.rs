//! Weft's integration tests: one binary, a module per behaviour. The
//! harness they share (helpers, the reference model, the fuzz action
//! model and random driver) is the `weft-testkit` crate. The one test
//! with a binary of its own is `import_memory.rs`: it installs a counting
//! global allocator.

mod blocks;
mod cancel;
mod checkout;
mod containers;
mod cursors;
mod embeds;
mod errors;
mod events;
mod format_fixtures;
mod fuzz_corpus;
mod history;
mod import_errors;
mod maps;
mod merge;
mod presence;
mod reads;
mod rich_text;
mod serde;
mod shallow;
mod snapshot;
mod snapshot_styles;
mod styles;
mod sync;
mod text_edits;
mod traces;
mod undo;
mod utf16;
mod version_encoding;
