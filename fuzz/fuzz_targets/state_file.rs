//! Fuzz target: `loopx::fuzz::state_file` (see src/fuzz.rs for what it checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| loopx::fuzz::state_file(data));
