//! libFuzzer target: IR text → parse → verify → round trip → interpreter vs JIT → forward and
//! reverse derivatives, verified, compiled and run alike (see `tests/fuzz_pipeline/mod.rs`).
#![no_main]

#[path = "../../tests/fuzz_pipeline/mod.rs"]
mod fuzz_pipeline;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_pipeline::run(data);
});
