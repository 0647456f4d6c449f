//! Fuzz target: `loopx::fuzz::verify_tick` (see src/fuzz.rs for what it checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| loopx::fuzz::verify_tick(data));
