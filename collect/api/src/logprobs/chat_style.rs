//! The chat-style logprobs layout: `{"content": [{token, bytes, logprob, top_logprobs[], id?}]}`.
//! llama-server uses it for both endpoints (adding `id`); vLLM and SGLang for chat; Fireworks
//! inside `raw_output.completion_logprobs`. Ids may be named `id` or `token_id`, or printed as
//! vLLM's `token_id:N` tokens; a refusal's tokens come in `refusal` instead of `content`.

use hspi_datasets::{TokenStep, TopEntry};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::value::{logprob, top_sorted};
use crate::error::ApiError;

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow)]
    content: Option<Vec<Step<'a>>>,
    /// OpenAI: the refusal's tokens when the model refused (`content` is then null).
    #[serde(borrow)]
    refusal: Option<Vec<Step<'a>>>,
}

#[derive(Deserialize)]
struct Step<'a> {
    token: String,
    #[serde(alias = "token_id")]
    id: Option<u32>,
    bytes: Option<Vec<u8>>,
    #[serde(borrow)]
    logprob: Option<&'a RawValue>,
    #[serde(borrow, default)]
    top_logprobs: Option<Vec<Top<'a>>>,
}

#[derive(Deserialize)]
struct Top<'a> {
    token: String,
    #[serde(alias = "token_id")]
    id: Option<u32>,
    #[serde(borrow)]
    logprob: &'a RawValue,
}

/// vLLM with `return_tokens_as_token_ids` prints each token as `token_id:N`: the id is read
/// from it (the text is then unknown, so the id stands for it).
fn token_and_id(token: String, id: Option<u32>) -> (String, Option<u32>) {
    match token.strip_prefix("token_id:").and_then(|n| n.parse().ok()) {
        Some(n) if id.is_none() => (token, Some(n)),
        _ => (token, id),
    }
}

pub(crate) fn parse(raw: &str) -> Result<Vec<TokenStep>, ApiError> {
    let c: Content =
        serde_json::from_str(raw).map_err(|e| ApiError::logprobs("chat-style logprobs", e))?;
    let mut out = Vec::new();
    let steps = c.content.or(c.refusal).unwrap_or_default();
    for (k, s) in steps.into_iter().enumerate() {
        let at = format!("logprobs.content[{k}]");
        let top = s
            .top_logprobs
            .unwrap_or_default()
            .into_iter()
            .map(|t| {
                let (token, id) = token_and_id(t.token, t.id);
                Ok(TopEntry {
                    token,
                    id,
                    logprob: logprob(t.logprob, &at)?,
                })
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        let (token, id) = token_and_id(s.token, s.id);
        out.push(TokenStep {
            token,
            id,
            bytes: s.bytes,
            logprob: s
                .logprob
                .filter(|r| r.get() != "null")
                .map(|r| logprob(r, &at))
                .transpose()?,
            top: top_sorted(top),
        });
    }
    Ok(out)
}
