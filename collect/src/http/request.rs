//! The request body for each API shape. Generation is pinned: temperature and seed from the probe,
//! and where the server honours them `cache_prompt: false` (a cache hit changes the bits) and
//! `repeat_penalty: 1` (llama-cpp-python applies 1.1 by default).

use hspi_datasets::GenerationParams;
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiShape {
    /// `/v1/chat/completions`
    Chat,
    /// `/v1/completions`
    Completions,
}

impl ApiShape {
    /// Infer from the URL's path, or None when it names neither.
    pub fn from_url(url: &str) -> Option<ApiShape> {
        let path = url.split('?').next().unwrap_or(url).trim_end_matches('/');
        if path.ends_with("/chat/completions") {
            Some(ApiShape::Chat)
        } else if path.ends_with("/completions") {
            Some(ApiShape::Completions)
        } else {
            None
        }
    }
}

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

pub fn body(
    shape: ApiShape,
    model: &str,
    prompt: &str,
    p: &GenerationParams,
    o: &RequestOptions,
) -> String {
    let mut v = match shape {
        ApiShape::Chat => json!({
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "logprobs": p.top_logprobs > 0,
            "top_logprobs": p.top_logprobs,
        }),
        ApiShape::Completions => json!({
            "model": model,
            "prompt": prompt,
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "logprobs": p.top_logprobs,
        }),
    };
    if let Some(seed) = p.seed {
        v["seed"] = json!(seed);
    }
    if o.llama_extensions {
        v["cache_prompt"] = json!(false);
        v["repeat_penalty"] = json!(1.0);
    }
    v.to_string()
}
