//! Integration tests of weft-sync: real server processes (`weft-server`),
//! real sockets on loopback, real databases (SQLite, and PostgreSQL on a
//! server the harness starts).

// weft-store's harness: temporary directories, a PostgreSQL server.
#[allow(dead_code)]
#[path = "../../weft-store/tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../../weft-store/tests/pg.rs"]
mod pg;

mod harness;

mod attack;
mod converge;
mod crash;
mod divergent;
mod hostile;
mod many;
mod presence;
mod slow;
