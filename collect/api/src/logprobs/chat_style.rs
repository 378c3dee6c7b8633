//! The chat-style logprobs layout: `{"content": [{token, bytes, logprob, top_logprobs[], id?}]}`.
//! llama-server uses it for both endpoints (adding `id`); vLLM and SGLang for chat. vLLM can name
//! ids `token_id`; both spellings are read.

use hspi_datasets::{TokenStep, TopEntry};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::value::{logprob, top_sorted};
use crate::error::ApiError;

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow)]
    content: Option<Vec<Step<'a>>>,
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

pub(crate) fn parse(raw: &str) -> Result<Vec<TokenStep>, ApiError> {
    let c: Content =
        serde_json::from_str(raw).map_err(|e| ApiError::logprobs("chat-style logprobs", e))?;
    let mut out = Vec::new();
    for (k, s) in c.content.unwrap_or_default().into_iter().enumerate() {
        let at = format!("logprobs.content[{k}]");
        let top = s
            .top_logprobs
            .unwrap_or_default()
            .into_iter()
            .map(|t| {
                Ok(TopEntry {
                    token: t.token,
                    id: t.id,
                    logprob: logprob(t.logprob, &at)?,
                })
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        out.push(TokenStep {
            token: s.token,
            id: s.id,
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
