//! Fuzz target: `loopx::fuzz::hook_payload` (see src/fuzz.rs for what it checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| loopx::fuzz::hook_payload(data));
