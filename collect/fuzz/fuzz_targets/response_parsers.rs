//! Endpoint responses are untrusted: every parser must return a result or a clear error for any
//! bytes, never panic. `cargo fuzz run response_parsers -- -runs=N` (see the README).
#![no_main]

// hspi-collect's parser files themselves, without the rest of the crate.
#[path = "../../src/http/chat_logprobs.rs"]
#[allow(dead_code)]
mod chat_logprobs;
#[path = "../../src/http/legacy_logprobs.rs"]
#[allow(dead_code)]
mod legacy_logprobs;
#[path = "../../src/http/response.rs"]
#[allow(dead_code)]
mod response;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    // Both response shapes (chat `content[]` and legacy `tokens`/`token_logprobs`) go through here.
    if let Err(e) = response::parse(body) {
        assert!(!e.trim().is_empty(), "an empty error for {body:?}");
    }
});
