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
    /// A language model's architecture family as its weights name it (`llama`, `gemma3`, …;
    /// GGUF `general.architecture`, `config.json`'s `model_type`); none for datasets written
    /// before it was recorded and for remote endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// A language model's tokenizer fingerprint (its vocabulary, merges and special tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_sha256: Option<String>,
}

impl ModelInfo {
    /// A model known by its name, weights and task alone (no architecture or tokenizer recorded).
    pub fn new(id: impl Into<String>, weights_sha256: impl Into<String>, task: &str) -> ModelInfo {
        ModelInfo {
            id: id.into(),
            weights_sha256: weights_sha256.into(),
            task: task.into(),
            architecture: None,
            tokenizer_sha256: None,
        }
    }

    /// Whether `other` is the same model: the same name, weights and task, and the same
    /// architecture and tokenizer wherever both record them (a dataset written before they were
    /// recorded is the same model as a new one of the same weights).
    pub fn same_model(&self, other: &ModelInfo) -> bool {
        let agree = |a: &Option<String>, b: &Option<String>| match (a, b) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        self.id == other.id
            && self.weights_sha256 == other.weights_sha256
            && self.task == other.task
            && agree(&self.architecture, &other.architecture)
            && agree(&self.tokenizer_sha256, &other.tokenizer_sha256)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_the_same_where_both_record_its_architecture_and_tokenizer_alike() {
        let old = ModelInfo::new("m", "ab", CAUSAL_LM);
        let new = ModelInfo {
            architecture: Some("llama".into()),
            tokenizer_sha256: Some("t1".into()),
            ..old.clone()
        };
        assert!(
            old.same_model(&new) && new.same_model(&old),
            "written before they were recorded"
        );
        let other_vocabulary = ModelInfo {
            tokenizer_sha256: Some("t2".into()),
            ..new.clone()
        };
        assert!(!new.same_model(&other_vocabulary));
        let other_arch = ModelInfo {
            architecture: Some("qwen2".into()),
            ..new.clone()
        };
        assert!(!new.same_model(&other_arch));
        assert!(!old.same_model(&ModelInfo::new("m", "cd", CAUSAL_LM)));
    }
}
