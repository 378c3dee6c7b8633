//! Probes: one input each, identified by the sha256 of its content.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProbeInput {
    /// An image tensor in [0, 1], row-major with `shape` = [channels, height, width].
    Image { shape: Vec<usize>, pixels: Vec<f32> },
    /// Token ids fed to a language model; the next-token logits are the output.
    Tokens { ids: Vec<u32> },
    /// A prompt for an endpoint that tokenises itself.
    Prompt {
        text: String,
        params: GenerationParams,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationParams {
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_logprobs: u32,
    pub seed: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeProvenance {
    pub generator: String,
    pub seed: u64,
    pub index: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub id: String,
    pub input: ProbeInput,
    pub provenance: ProbeProvenance,
}

impl Probe {
    pub fn new(input: ProbeInput, provenance: ProbeProvenance) -> Probe {
        Probe {
            id: content_id(&input),
            input,
            provenance,
        }
    }

    /// True when the stored id is the hash of the stored content.
    pub fn id_matches_content(&self) -> bool {
        self.id == content_id(&self.input)
    }
}

/// 128 bits of sha256 over the canonical JSON of the input (serde_json prints f32 exactly).
pub fn content_id(input: &ProbeInput) -> String {
    let json = serde_json::to_vec(input).expect("probe inputs always serialise");
    hex::encode(&Sha256::digest(&json)[..16])
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSet {
    pub generator: String,
    pub seed: u64,
    pub probes: Vec<Probe>,
}

impl ProbeSet {
    /// Hash of the ordered probe ids: two sets with equal hashes hold the same inputs.
    pub fn hash(&self) -> String {
        let mut h = Sha256::new();
        for p in &self.probes {
            h.update(p.id.as_bytes());
            h.update(b"\n");
        }
        hex::encode(h.finalize())
    }
}
