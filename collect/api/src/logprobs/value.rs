//! One printed logprob, and the order top lists are kept in.

use hspi_datasets::{Logprob, TopEntry};
use serde_json::value::RawValue;

use crate::error::ApiError;

pub(crate) fn logprob(raw: &RawValue, at: &str) -> Result<Logprob, ApiError> {
    Logprob::parse(raw.get()).map_err(|e| ApiError::logprobs(at, e))
}

/// Highest logprob first; equal values by token, so the order never depends on the JSON's.
pub(crate) fn top_sorted(mut top: Vec<TopEntry>) -> Vec<TopEntry> {
    top.sort_by(|a, b| {
        b.logprob
            .value()
            .total_cmp(&a.logprob.value())
            .then(a.token.cmp(&b.token))
    });
    top
}
