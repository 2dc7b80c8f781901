//! Arbitrary bytes as a weft-kv table: `Ok` or `Err`, never a panic; a
//! table that imports reads back and re-exports consistently.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    weft_kv::fuzzing::run_decode(data);
});
