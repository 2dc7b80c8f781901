//! Arbitrary bytes imported into an empty and a non-empty document: `Ok`
//! or `Err`, never a panic, and an `Err` changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    weft::fuzzing::run_import(data);
});
