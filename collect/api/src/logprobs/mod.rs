//! The two logprob layouts seen inside OpenAI-compatible answers, whichever endpoint path was asked:
//! chat style (`content[]`) and legacy style (`tokens` + `token_logprobs`).

mod chat_style;
mod legacy_style;
mod value;

pub(crate) use value::{logprob, top_sorted};

use hspi_datasets::TokenStep;

use crate::error::ApiError;

/// Chat-style or legacy, whichever the object is.
pub(crate) fn parse(raw: &str) -> Result<Vec<TokenStep>, ApiError> {
    let keys: serde_json::Map<String, serde_json::Value> = serde_json::from_str(raw)
        .map_err(|e| ApiError::logprobs("logprobs", format!("not an object: {e}")))?;
    if keys.contains_key("content") {
        chat_style::parse(raw)
    } else if keys.contains_key("tokens") || keys.contains_key("token_logprobs") {
        legacy_style::parse(raw)
    } else {
        Err(ApiError::logprobs(
            "logprobs",
            "has neither `content` (chat style) nor `tokens` (legacy style)",
        ))
    }
}
