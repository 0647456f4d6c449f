//! Fuzz target: `loopx::fuzz::op_message` (see src/fuzz.rs for what it checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| loopx::fuzz::op_message(data));
