//! The legacy completions shape: `{tokens[], token_logprobs[], top_logprobs: [{token: lp}], text_offset[]}`
//! (llama-cpp-python, vLLM and SGLang completions). Alternatives are keyed by token string, so
//! equal strings collide; the JSON order is not meaningful and entries are sorted by logprob.

use std::collections::BTreeMap;

use hspi_datasets::{TokenStep, TopEntry};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::response::{logprob, top_sorted};

#[derive(Deserialize)]
struct Legacy<'a> {
    tokens: Option<Vec<String>>,
    #[serde(borrow)]
    token_logprobs: Option<Vec<Option<&'a RawValue>>>,
    #[serde(borrow)]
    top_logprobs: Option<Vec<Option<&'a RawValue>>>,
}

pub fn parse(raw: &str) -> Result<Vec<TokenStep>, String> {
    let l: Legacy = serde_json::from_str(raw).map_err(|e| format!("legacy logprobs: {e}"))?;
    let tokens = l.tokens.ok_or("legacy logprobs without `tokens`")?;
    let lps = l.token_logprobs.unwrap_or_default();
    let tops = l.top_logprobs.unwrap_or_default();
    if !lps.is_empty() && lps.len() != tokens.len() {
        return Err(format!(
            "legacy logprobs: {} tokens but {} token_logprobs",
            tokens.len(),
            lps.len()
        ));
    }
    tokens
        .into_iter()
        .enumerate()
        .map(|(k, token)| {
            let at = |e: String| format!("logprobs step {k}: {e}");
            let lp = match lps.get(k).copied().flatten() {
                Some(r) if r.get() != "null" => Some(logprob(r).map_err(at)?),
                _ => None,
            };
            let top = match tops.get(k).copied().flatten() {
                Some(r) if r.get() != "null" => {
                    let map: BTreeMap<String, &RawValue> = serde_json::from_str(r.get())
                        .map_err(|e| at(format!("top_logprobs: {e}")))?;
                    map.into_iter()
                        .map(|(token, v)| {
                            Ok(TopEntry {
                                token,
                                id: None,
                                logprob: logprob(v).map_err(at)?,
                            })
                        })
                        .collect::<Result<Vec<_>, String>>()?
                }
                _ => Vec::new(),
            };
            Ok(TokenStep {
                token,
                id: None,
                bytes: None,
                logprob: lp,
                top: top_sorted(top),
            })
        })
        .collect()
}
