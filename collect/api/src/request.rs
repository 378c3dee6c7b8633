//! What every shape's request pins: where the server honours them `cache_prompt: false` (a cache
//! hit changes the bits) and `repeat_penalty: 1` (llama-cpp-python applies 1.1 by default), and
//! the probe's seed, folded into the range every API takes ([`wire_seed`]).

use hspi_datasets::GenerationParams;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestOptions {
    /// Send llama.cpp's `cache_prompt` and `repeat_penalty` (strict OpenAI servers may refuse them).
    pub llama_extensions: bool,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            llama_extensions: true,
        }
    }
}

/// The largest seed sent: every API takes a non-negative 31-bit integer (vLLM and SGLang
/// validate a signed 64-bit one and answer HTTP 400 above 2^63 − 1; llama.cpp reads an unsigned
/// 32-bit one; Gemini's is a signed 32-bit one).
pub const MAX_WIRE_SEED: u64 = i32::MAX as u64;

/// A probe's seed as sent. Seeds up to [`MAX_WIRE_SEED`] go as they are (so the pool's requests
/// are unchanged); a larger one (a fresh audit's draw seed) is folded into that range, all of its
/// bits counting, so two fresh audits still ask with different seeds.
pub fn wire_seed(seed: u64) -> u64 {
    if seed <= MAX_WIRE_SEED {
        return seed;
    }
    (seed ^ (seed >> 31) ^ (seed >> 62)) & MAX_WIRE_SEED
}

/// Add the fields every shape sends alike, and write the body.
pub(crate) fn finish(mut v: Value, p: &GenerationParams, o: &RequestOptions) -> String {
    if let Some(seed) = p.seed {
        v["seed"] = json!(wire_seed(seed));
    }
    if o.llama_extensions {
        v["cache_prompt"] = json!(false);
        v["repeat_penalty"] = json!(1.0);
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_is_sent_within_31_bits_and_small_ones_unchanged() {
        for seed in [0, 7, MAX_WIRE_SEED] {
            assert_eq!(wire_seed(seed), seed);
        }
        let big = [
            MAX_WIRE_SEED + 1,
            15_816_941_566_597_272_270,
            i64::MAX as u64,
            u64::MAX,
        ];
        for seed in big {
            assert!(wire_seed(seed) <= MAX_WIRE_SEED, "{seed}");
        }
        // Folded, not truncated: seeds differing only in their high bits are sent apart.
        assert_ne!(wire_seed(1 << 40), wire_seed(1 << 41));
        assert_ne!(wire_seed(u64::MAX), wire_seed(u64::MAX - (1 << 50)));
    }
}
