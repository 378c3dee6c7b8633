//! Parse an OpenAI-compatible completion response into a record's outputs. Logprobs are read as
//! raw JSON numbers (`RawValue`), so the printed digits are kept and the f32 bits recovered exactly.

use hspi_datasets::{Logprob, Outputs, TokenStep, TopEntry, Usage};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{chat_logprobs, legacy_logprobs};

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
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

#[derive(Deserialize)]
struct UsageJson {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// Describe what came back when it is not JSON, without echoing a whole page.
fn snippet(body: &str) -> String {
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

pub fn parse(body: &str) -> Result<Parsed, String> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            return Err(format!("the endpoint answered with an error: {e}"));
        }
    }
    let b: Body = serde_json::from_str(body)
        .map_err(|e| format!("malformed response ({e}): got {}", snippet(body)))?;
    if let Some(e) = b.error {
        return Err(format!("the endpoint answered with an error: {e}"));
    }
    let choice = b
        .choices
        .into_iter()
        .next()
        .ok_or("the response has no choices")?;
    let text = choice
        .text
        .or_else(|| choice.message.and_then(|m| m.content))
        .unwrap_or_default();
    let steps = match choice.logprobs {
        None => None,
        Some(raw) if raw.get().trim() == "null" => None,
        Some(raw) => Some(parse_logprobs(raw.get())?),
    };
    Ok(Parsed {
        id: b.id,
        model: b.model,
        system_fingerprint: b.system_fingerprint,
        has_logprobs: steps.is_some(),
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

/// Chat-style (`content[]`) or legacy (`tokens` + `token_logprobs`), whichever the object is.
fn parse_logprobs(raw: &str) -> Result<Vec<TokenStep>, String> {
    let keys: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(raw).map_err(|e| format!("logprobs is not an object: {e}"))?;
    if keys.contains_key("content") {
        chat_logprobs::parse(raw)
    } else if keys.contains_key("tokens") || keys.contains_key("token_logprobs") {
        legacy_logprobs::parse(raw)
    } else {
        Err("logprobs has neither `content` (chat style) nor `tokens` (legacy style)".into())
    }
}

pub(crate) fn logprob(raw: &RawValue) -> Result<Logprob, String> {
    Logprob::parse(raw.get())
}

pub(crate) fn top_sorted(mut top: Vec<TopEntry>) -> Vec<TopEntry> {
    top.sort_by(|a, b| {
        b.logprob
            .value()
            .total_cmp(&a.logprob.value())
            .then(a.token.cmp(&b.token))
    });
    top
}
