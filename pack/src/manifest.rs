//! pack.json: what a pack is for (model, engine family), what it holds (pool, platforms and where
//! their answers came from), how it was made, and the sha256 of every other file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const SCHEMA: u32 = 1;
pub const MANIFEST: &str = "pack.json";
/// The audit prompts (a probe-set file).
pub const POOL: &str = "pool.json";
/// The classifier trained on the references (`hspi train`'s format).
pub const CLASSIFIER: &str = "classifier.json";
/// Prompt tokens each pool prompt must be billed for.
pub const PROMPT_TOKENS: &str = "prompt-tokens.json";
/// One dataset directory per source of reference answers.
pub const REFERENCES: &str = "references";
/// Answers asked again on the same platforms: the classes' determinism flags.
pub const REPEATS: &str = "repeats";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackManifest {
    pub schema: u32,
    /// The content address: sha256 over this manifest (with `id` empty) and every file.
    pub id: String,
    /// `MODEL-ENGINE`, the directory name an installed pack gets (with the id's first digits).
    pub name: String,
    pub model: PackModel,
    /// The engine family the references come from (llamacpp, candle, or an endpoint's).
    pub engine: String,
    pub hspi_version: String,
    pub created_unix: u64,
    pub pool: PoolInfo,
    pub platforms: Vec<PackPlatform>,
    /// The commands that built and merged it, in order.
    pub provenance: Vec<String>,
    /// Path (relative, `/`-separated) → sha256 of every file but pack.json.
    pub files: BTreeMap<String, String>,
}

impl PackManifest {
    /// What `hspi pack verify/list/build` print: name, id, model, pool and platforms.
    pub fn summary(&self, dir: &std::path::Path) -> String {
        let mut s = format!(
            "pack {} ({}) at {}\n  id {}\n  model {}{}{}{}\n  pool {} prompts ({} tokens, top {} logprobs)\n  built by hspi {}; {} platforms:\n",
            self.name,
            self.engine,
            dir.display(),
            self.id,
            self.model.id,
            self.model
                .architecture
                .as_ref()
                .map(|a| format!(" ({a})"))
                .unwrap_or_default(),
            self.model
                .weights_sha256
                .as_ref()
                .map(|s| format!(", weights sha256 {}", &s[..12.min(s.len())]))
                .unwrap_or_default(),
            self.model
                .tokenizer_sha256
                .as_ref()
                .map(|s| format!(", tokenizer sha256 {}", &s[..12.min(s.len())]))
                .unwrap_or_default(),
            self.pool.probes,
            self.pool.max_tokens,
            self.pool.top_logprobs,
            self.hspi_version,
            self.platforms.len(),
        );
        for p in &self.platforms {
            let det = match p.deterministic {
                Some(true) => "repeats bit for bit",
                Some(false) => "varies between repeats",
                None => "repeats not measured",
            };
            s.push_str(&format!(
                "    {:<42} {:>4} prompts, {det}; {}\n",
                p.platform, p.probes, p.source
            ));
        }
        s
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackModel {
    /// The model id the references' datasets carry (what the endpoint was asked for).
    pub id: String,
    /// Other names a provider may serve it under (matched case-insensitively).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// sha256 of the weights file the local references were computed from.
    pub weights_sha256: Option<String>,
    /// sha256 over the tokenizer's vocabulary and merges (what billing counts depend on).
    pub tokenizer_sha256: Option<String>,
    /// The weights' architecture family (`general.architecture`: `llama`, `gemma3`, …), where
    /// the pack computed references from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
}

impl PackModel {
    /// Whether `name` (as a provider names the model: `org/Model-Name`, any case) is this model.
    pub fn matches(&self, name: &str) -> bool {
        let norm = |s: &str| {
            s.rsplit('/')
                .next()
                .unwrap_or(s)
                .to_ascii_lowercase()
                .replace('_', "-")
        };
        let asked = norm(name);
        std::iter::once(&self.id)
            .chain(&self.aliases)
            .map(|n| norm(n))
            .any(|n| !n.is_empty() && (asked == n || asked.starts_with(&format!("{n}-"))))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolInfo {
    pub probes: usize,
    /// The probe set's hash (ordered ids).
    pub hash: String,
    pub max_tokens: u32,
    pub top_logprobs: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackPlatform {
    pub platform: String,
    /// Where its answers came from: `local llama-server …`, `endpoint URL`, `merged DIR`.
    pub source: String,
    /// Pool prompts it answered.
    pub probes: usize,
    /// Its dataset directories under references/.
    pub datasets: Vec<String>,
    /// Whether its answers repeat bit for bit (None: not measured).
    pub deterministic: Option<bool>,
}

/// The prompt tokens each pool prompt must be billed for, and who counted them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptTokens {
    /// `hspi tokenizer (sha256 …) with the model's chat template`, or the trusted endpoint's usage.
    pub counted_by: String,
    /// Probe id → prompt tokens.
    pub counts: BTreeMap<String, u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_of_the_model_match_and_other_models_do_not() {
        let m = PackModel {
            id: "smollm2".into(),
            aliases: vec!["SmolLM2-135M-Instruct".into()],
            weights_sha256: None,
            tokenizer_sha256: None,
            architecture: None,
        };
        for name in [
            "smollm2",
            "SmolLM2",
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            "smollm2-135m-instruct-q8",
        ] {
            assert!(m.matches(name), "{name}");
        }
        for name in ["llama-3-8b", "smollm", "smollm21", ""] {
            assert!(!m.matches(name), "{name}");
        }
    }
}
