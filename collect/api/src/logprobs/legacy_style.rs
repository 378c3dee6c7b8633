//! The legacy logprobs layout: `{tokens[], token_logprobs[], top_logprobs: [{token: lp}],
//! text_offset[], token_ids[]?}` (OpenAI and llama-cpp-python completions, vLLM and SGLang
//! completions, Together for both endpoints; `token_ids` from Together and Fireworks). Alternatives are keyed by token
//! string, so equal strings collide; the JSON order is not meaningful and entries are sorted by
//! logprob.

use std::collections::BTreeMap;

use hspi_datasets::{TokenStep, TopEntry};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::value::{logprob, top_sorted};
use crate::error::ApiError;

#[derive(Deserialize)]
struct Legacy<'a> {
    tokens: Option<Vec<String>>,
    #[serde(borrow)]
    token_logprobs: Option<Vec<Option<&'a RawValue>>>,
    #[serde(borrow)]
    top_logprobs: Option<Vec<Option<&'a RawValue>>>,
    /// Together and Fireworks add the sampled tokens' ids.
    token_ids: Option<Vec<u32>>,
}

pub(crate) fn parse(raw: &str) -> Result<Vec<TokenStep>, ApiError> {
    let l: Legacy =
        serde_json::from_str(raw).map_err(|e| ApiError::logprobs("legacy logprobs", e))?;
    let tokens = l
        .tokens
        .ok_or_else(|| ApiError::logprobs("legacy logprobs", "no `tokens`"))?;
    let lps = l.token_logprobs.unwrap_or_default();
    let tops = l.top_logprobs.unwrap_or_default();
    let ids = l.token_ids.unwrap_or_default();
    if !lps.is_empty() && lps.len() != tokens.len() {
        return Err(ApiError::logprobs(
            "legacy logprobs",
            format!("{} tokens but {} token_logprobs", tokens.len(), lps.len()),
        ));
    }
    tokens
        .into_iter()
        .enumerate()
        .map(|(k, token)| {
            let at = format!("logprobs step {k}");
            let lp = match lps.get(k).copied().flatten() {
                Some(r) if r.get() != "null" => Some(logprob(r, &at)?),
                _ => None,
            };
            let top = match tops.get(k).copied().flatten() {
                Some(r) if r.get() != "null" => {
                    let map: BTreeMap<String, &RawValue> = serde_json::from_str(r.get())
                        .map_err(|e| ApiError::logprobs(&at, format!("top_logprobs: {e}")))?;
                    map.into_iter()
                        .map(|(token, v)| {
                            Ok(TopEntry {
                                token,
                                id: None,
                                logprob: logprob(v, &at)?,
                            })
                        })
                        .collect::<Result<Vec<_>, ApiError>>()?
                }
                _ => Vec::new(),
            };
            Ok(TokenStep {
                token,
                id: ids.get(k).copied(),
                bytes: None,
                logprob: lp,
                top: top_sorted(top),
            })
        })
        .collect()
}
