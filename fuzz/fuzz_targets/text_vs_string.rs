//! One document against a `String`, positions in chars, UTF-8 and UTF-16.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_testkit::{run_text_vs_string, Action};

fuzz_target!(|actions: Vec<Action>| {
    run_text_vs_string(&actions);
});
