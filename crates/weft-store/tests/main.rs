//! Integration tests of weft-store, on real databases and real processes.
//!
//! `conformance` runs one suite against every backend (SQLite always,
//! PostgreSQL with the `postgres` feature, on a server the harness starts);
//! the other modules test what needs a process, a disk or a size.

mod common;
mod conformance;
mod corruption;
mod disk_full;
mod kill;
mod pg;
mod processes;
mod scale;
