//! SGLang's native `/generate`: the prompt as raw text (no chat template), sampling parameters
//! apart, and logprobs in `meta_info` as `[logprob, token_id, text]` triples
//! (`output_token_logprobs`, and `output_top_logprobs` per step).

use hspi_datasets::{AskedAs, GenerationParams, Outputs, TokenStep, TopEntry, Usage};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::envelope::{snippet, Parsed};
use crate::logprobs::{logprob, top_sorted};
use crate::request::RequestOptions;
use crate::{ApiError, ApiShape};

pub struct SglangGenerate;

#[derive(Deserialize)]
struct Body<'a> {
    text: Option<String>,
    #[serde(borrow)]
    meta_info: Option<Meta<'a>>,
    error: Option<serde_json::Value>,
}

/// `[logprob, token_id, text]`; the text is null unless `return_text_in_logprobs` was asked.
type Triple<'a> = (&'a RawValue, u32, Option<String>);

#[derive(Deserialize)]
struct Meta<'a> {
    id: Option<String>,
    finish_reason: Option<serde_json::Value>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    #[serde(borrow)]
    output_token_logprobs: Option<Vec<Triple<'a>>>,
    #[serde(borrow)]
    output_top_logprobs: Option<Vec<Option<Vec<Triple<'a>>>>>,
}

fn entry((lp, id, text): &Triple, at: &str) -> Result<TopEntry, ApiError> {
    Ok(TopEntry {
        token: text.clone().unwrap_or_default(),
        id: Some(*id),
        logprob: logprob(lp, at)?,
    })
}

impl ApiShape for SglangGenerate {
    fn name(&self) -> &'static str {
        "sglang"
    }
    fn url_suffix(&self) -> &'static str {
        "/generate"
    }
    fn asked_as(&self) -> AskedAs {
        AskedAs::RawPrompt
    }
    fn served_by(&self) -> &'static [&'static str] {
        &["sglang"]
    }
    fn body(&self, _model: &str, prompt: &str, p: &GenerationParams, _: &RequestOptions) -> String {
        let mut sampling = json!({
            "max_new_tokens": p.max_tokens,
            "temperature": p.temperature,
        });
        if let Some(seed) = p.seed {
            sampling["sampling_seed"] = json!(crate::request::wire_seed(seed));
        }
        json!({
            "text": prompt,
            "sampling_params": sampling,
            "return_logprob": p.top_logprobs > 0,
            "top_logprobs_num": p.top_logprobs,
            "return_text_in_logprobs": true,
            "logprob_start_len": -1,
        })
        .to_string()
    }
    fn parse(&self, body: &str) -> Result<Parsed, ApiError> {
        let b: Body = serde_json::from_str(body).map_err(|e| ApiError::Malformed {
            reason: e.to_string(),
            snippet: snippet(body),
        })?;
        if let Some(e) = b.error.filter(|e| !e.is_null()) {
            return Err(ApiError::EndpointError(e.to_string()));
        }
        let meta = b
            .meta_info
            .ok_or_else(|| ApiError::logprobs("meta_info", "missing"))?;
        let tops = meta.output_top_logprobs.unwrap_or_default();
        let steps = meta
            .output_token_logprobs
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let at = format!("meta_info.output_token_logprobs[{k}]");
                let own = entry(t, &at)?;
                let top = tops
                    .get(k)
                    .and_then(Option::as_ref)
                    .map(|list| list.iter().map(|t| entry(t, &at)).collect())
                    .transpose()?
                    .unwrap_or_default();
                Ok(TokenStep {
                    token: own.token,
                    id: own.id,
                    bytes: None,
                    logprob: Some(own.logprob),
                    top: top_sorted(top),
                })
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        let finish_reason = meta.finish_reason.and_then(|f| match f {
            serde_json::Value::String(s) => Some(s),
            serde_json::Value::Object(o) => o.get("type").and_then(|t| t.as_str()).map(Into::into),
            _ => None,
        });
        Ok(Parsed {
            id: meta.id,
            model: None,
            system_fingerprint: None,
            has_logprobs: !steps.is_empty(),
            outputs: Outputs::Completion {
                text: b.text.unwrap_or_default(),
                steps,
                finish_reason,
            },
            usage: meta
                .prompt_tokens
                .zip(meta.completion_tokens)
                .map(|(p, c)| Usage {
                    prompt_tokens: p,
                    completion_tokens: c,
                }),
        })
    }
}
