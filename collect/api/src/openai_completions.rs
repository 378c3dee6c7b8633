//! OpenAI's legacy completions (`/completions`): the prompt as text, `logprobs` as a count. Its
//! answers carry logprobs in the legacy shape (`tokens`, `token_logprobs`, `top_logprobs`; vLLM,
//! SGLang, llama-cpp-python) or, from llama-server, in the chat shape: both are read.

use hspi_datasets::{AskedAs, GenerationParams};
use serde_json::json;

use crate::envelope::{self, Parsed};
use crate::request::{finish, RequestOptions};
use crate::{ApiError, ApiShape};

pub struct OpenAiCompletions;

impl ApiShape for OpenAiCompletions {
    fn name(&self) -> &'static str {
        "completions"
    }
    fn url_suffix(&self) -> &'static str {
        "/completions"
    }
    fn asked_as(&self) -> AskedAs {
        AskedAs::RawPrompt
    }
    fn served_by(&self) -> &'static [&'static str] {
        &["llama-server", "vllm", "sglang"]
    }
    fn body(&self, model: &str, prompt: &str, p: &GenerationParams, o: &RequestOptions) -> String {
        let v = json!({
            "model": model,
            "prompt": prompt,
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "logprobs": p.top_logprobs,
        });
        finish(v, p, o)
    }
    fn parse(&self, body: &str) -> Result<Parsed, ApiError> {
        envelope::parse(body)
    }
}
