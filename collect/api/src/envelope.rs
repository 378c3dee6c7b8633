//! The OpenAI-compatible answer envelope both OpenAI shapes share: `choices[0]` with its text (or
//! message), logprobs, finish reason, and `usage`. Logprobs are read as raw JSON numbers
//! (`RawValue`), so the printed digits are kept and the f32 bits recovered exactly.

use hspi_datasets::{Outputs, Usage};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::ApiError;
use crate::logprobs;

/// One answer, parsed once: what it says about itself, its outputs and its usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub id: Option<String>,
    pub model: Option<String>,
    pub system_fingerprint: Option<String>,
    pub outputs: Outputs,
    pub usage: Option<Usage>,
    /// False when the endpoint returned no logprobs at all (text-only evidence).
    pub has_logprobs: bool,
}

#[derive(Deserialize)]
struct Body<'a> {
    id: Option<String>,
    model: Option<String>,
    system_fingerprint: Option<String>,
    #[serde(borrow)]
    choices: Vec<Choice<'a>>,
    usage: Option<UsageJson>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    text: Option<String>,
    message: Option<Message>,
    #[serde(borrow)]
    logprobs: Option<&'a RawValue>,
    finish_reason: Option<String>,
    /// Fireworks with `raw_output: true`: the completion's token ids and logprobs.
    #[serde(borrow)]
    raw_output: Option<RawOutput<'a>>,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
    /// OpenAI: what the model said instead of answering (`content` is then null).
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct RawOutput<'a> {
    completion: Option<String>,
    #[serde(borrow)]
    completion_logprobs: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct UsageJson {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// Describe what came back when it is not JSON, without echoing a whole page.
pub(crate) fn snippet(body: &str) -> String {
    let s: String = body.chars().take(120).collect();
    let s = s.replace('\n', " ");
    if body.trim_start().starts_with('<') {
        format!("an HTML page, not JSON ({s}…)")
    } else if body.trim().is_empty() {
        "an empty body".into()
    } else {
        format!("'{s}'")
    }
}

pub(crate) fn parse(body: &str) -> Result<Parsed, ApiError> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            return Err(ApiError::EndpointError(e.to_string()));
        }
    }
    let b: Body = serde_json::from_str(body).map_err(|e| ApiError::Malformed {
        reason: e.to_string(),
        snippet: snippet(body),
    })?;
    if let Some(e) = b.error {
        return Err(ApiError::EndpointError(e.to_string()));
    }
    let choice = b.choices.into_iter().next().ok_or(ApiError::NoChoices)?;
    let raw_output = choice.raw_output;
    let text = choice
        .text
        .or_else(|| choice.message.and_then(|m| m.content.or(m.refusal)))
        .or_else(|| raw_output.as_ref().and_then(|r| r.completion.clone()))
        .unwrap_or_default();
    let present = |raw: &&RawValue| raw.get().trim() != "null";
    let steps = match choice.logprobs.filter(present).or_else(|| {
        raw_output
            .as_ref()
            .and_then(|r| r.completion_logprobs.filter(present))
    }) {
        None => None,
        Some(raw) => Some(logprobs::parse(raw.get())?),
    };
    // `logprobs: {"content": []}` or lists of nulls carry no more than no logprobs at all.
    let has_logprobs = steps
        .iter()
        .flatten()
        .any(|s| s.logprob.is_some() || !s.top.is_empty());
    Ok(Parsed {
        id: b.id,
        model: b.model,
        system_fingerprint: b.system_fingerprint,
        has_logprobs,
        outputs: Outputs::Completion {
            text,
            steps: steps.unwrap_or_default(),
            finish_reason: choice.finish_reason,
        },
        usage: b.usage.map(|u| Usage {
            prompt_tokens: u.prompt_tokens.unwrap_or(0),
            completion_tokens: u.completion_tokens.unwrap_or(0),
        }),
    })
}
