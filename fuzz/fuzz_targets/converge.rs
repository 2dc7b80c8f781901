//! 2 to 5 peers edit, mark, undo and redo (each with an `UndoManager`,
//! checked against the reference model) and sync in arbitrary orders;
//! they must end up identical (text, delta, version, frontiers) with
//! intact invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_testkit::{run_converge, Action};

fuzz_target!(|input: (u8, Vec<Action>)| {
    run_converge(input.0, &input.1);
});
