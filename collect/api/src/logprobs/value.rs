//! One printed logprob, and the order top lists are kept in.

use hspi_datasets::{Logprob, TopEntry};
use serde_json::value::RawValue;

use crate::error::ApiError;

pub(crate) fn logprob(raw: &RawValue, at: &str) -> Result<Logprob, ApiError> {
    Logprob::parse(raw.get()).map_err(|e| ApiError::logprobs(at, e))
}

/// In the one order of a top list (`hspi_datasets::record::top_rank`), never the JSON's.
pub(crate) fn top_sorted(mut top: Vec<TopEntry>) -> Vec<TopEntry> {
    top.sort_by(TopEntry::rank);
    top
}
