//! Endpoint responses are untrusted: every API shape's parser must return a result or a clear
//! error for any bytes, never panic. `cargo fuzz run response_parsers -- -runs=N` (see docs/how-hspi-decides.md, "Fuzzing").
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    // Every registered shape, and through them both logprob layouts (chat `content[]` and legacy
    // `tokens`/`token_logprobs`).
    for shape in hspi_api::SHAPES {
        if let Err(e) = shape.parse(body) {
            assert!(!e.to_string().trim().is_empty(), "an empty error for {body:?}");
        }
    }
});
