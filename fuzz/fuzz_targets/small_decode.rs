//! Arbitrary bytes as the small messages (version vector, frontiers,
//! cursor, presence): `Ok` or `Err`, never a panic; what decodes
//! re-encodes alike and is safe to use on a document.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    weft_testkit::run_small_decode(data);
});
