//! What every shape's request pins: where the server honours them `cache_prompt: false` (a cache
//! hit changes the bits) and `repeat_penalty: 1` (llama-cpp-python applies 1.1 by default), and
//! the probe's seed.

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

/// Add the fields every shape sends alike, and write the body.
pub(crate) fn finish(mut v: Value, p: &GenerationParams, o: &RequestOptions) -> String {
    if let Some(seed) = p.seed {
        v["seed"] = json!(seed);
    }
    if o.llama_extensions {
        v["cache_prompt"] = json!(false);
        v["repeat_penalty"] = json!(1.0);
    }
    v.to_string()
}
