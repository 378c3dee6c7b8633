//! The dataset manifest: schema version, provenance, model, probe set, platforms.

use serde::{Deserialize, Serialize};

use crate::platform::Platform;
use crate::provenance::HostProvenance;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema_version: u32,
    pub created_unix: u64,
    pub model: ModelInfo,
    pub probe_set: ProbeSetInfo,
    pub platforms: Vec<Platform>,
    /// One entry per collection run (the first, then each `--resume`).
    pub sessions: Vec<Session>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    /// sha256 of the weights file as loaded.
    pub weights_sha256: String,
    /// [`IMAGE_CLASSIFIER`], [`CAUSAL_LM`] or [`COMPLETION_ENDPOINT`].
    pub task: String,
}

/// The task of a language model whose logits hspi computes (a dataset's `model.task`).
pub const CAUSAL_LM: &str = "causal-lm";
/// The task of an image model.
pub const IMAGE_CLASSIFIER: &str = "image-classifier";
/// The task of a model served remotely, known by its answers only.
pub const COMPLETION_ENDPOINT: &str = "completion-endpoint";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSetInfo {
    pub hash: String,
    pub count: usize,
    pub generator: String,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub started_unix: u64,
    pub command: String,
    pub provenance: HostProvenance,
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
