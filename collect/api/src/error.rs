use thiserror::Error;

/// Why an endpoint's answer cannot be read. Endpoint responses are untrusted: every message names
/// what was wrong and where, and is never empty (the fuzz target checks that).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ApiError {
    #[error("unknown API shape '{name}' (known: {known})")]
    UnknownShape { name: String, known: String },
    #[error("the endpoint answered with an error: {0}")]
    EndpointError(String),
    #[error("malformed response ({reason}): got {snippet}")]
    Malformed { reason: String, snippet: String },
    #[error("the response has no choices")]
    NoChoices,
    #[error("{at}: {reason}")]
    Logprobs { at: String, reason: String },
}

impl ApiError {
    pub(crate) fn logprobs(at: impl Into<String>, reason: impl ToString) -> ApiError {
        ApiError::Logprobs {
            at: at.into(),
            reason: reason.to_string(),
        }
    }
}
