//! OpenAI's chat completions (`/chat/completions`): the prompt as one user message, logprobs as
//! `choices[0].logprobs.content[]` (llama-server, vLLM, SGLang alike).

use hspi_datasets::{AskedAs, GenerationParams};
use serde_json::json;

use crate::envelope::{self, Parsed};
use crate::request::{finish, RequestOptions};
use crate::{ApiError, ApiShape};

pub struct OpenAiChat;

impl ApiShape for OpenAiChat {
    fn name(&self) -> &'static str {
        "chat"
    }
    fn url_suffix(&self) -> &'static str {
        "/chat/completions"
    }
    fn asked_as(&self) -> AskedAs {
        AskedAs::ChatTemplate
    }
    fn served_by(&self) -> &'static [&'static str] {
        &["llama-server", "vllm", "sglang"]
    }
    fn body(&self, model: &str, prompt: &str, p: &GenerationParams, o: &RequestOptions) -> String {
        let mut v = json!({
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "logprobs": p.top_logprobs > 0,
        });
        // OpenAI refuses `top_logprobs` without `logprobs: true`.
        if p.top_logprobs > 0 {
            v["top_logprobs"] = json!(p.top_logprobs);
        }
        finish(v, p, o)
    }
    fn parse(&self, body: &str) -> Result<Parsed, ApiError> {
        envelope::parse(body)
    }
}
