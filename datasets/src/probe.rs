//! Probes: one input each, identified by the sha256 of its content.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// ProbeInput as it lies in a file: serde's internally tagged enums buffer every value before
/// choosing the variant, which made parsing most of the cost of reading a large probe set. The
/// fields are read straight into this flat form instead, then checked against the kind.
#[derive(Deserialize)]
struct ProbeInputFields {
    kind: InputKind,
    shape: Option<Vec<usize>>,
    pixels: Option<Vec<f32>>,
    ids: Option<Vec<u32>>,
    text: Option<String>,
    params: Option<GenerationParams>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum InputKind {
    Image,
    Tokens,
    Prompt,
}

impl<'de> Deserialize<'de> for ProbeInput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let f = ProbeInputFields::deserialize(d)?;
        let (kind, own): (&str, &[&str]) = match f.kind {
            InputKind::Image => ("image", &["shape", "pixels"]),
            InputKind::Tokens => ("tokens", &["ids"]),
            InputKind::Prompt => ("prompt", &["text", "params"]),
        };
        let present = [
            ("shape", f.shape.is_some()),
            ("pixels", f.pixels.is_some()),
            ("ids", f.ids.is_some()),
            ("text", f.text.is_some()),
            ("params", f.params.is_some()),
        ];
        if let Some((field, _)) = present.iter().find(|(n, p)| *p && !own.contains(n)) {
            return Err(D::Error::custom(format!(
                "field `{field}` does not belong to a {kind} input"
            )));
        }
        let need = |field: &'static str| D::Error::missing_field(field);
        Ok(match f.kind {
            InputKind::Image => ProbeInput::Image {
                shape: f.shape.ok_or_else(|| need("shape"))?,
                pixels: f.pixels.ok_or_else(|| need("pixels"))?,
            },
            InputKind::Tokens => ProbeInput::Tokens {
                ids: f.ids.ok_or_else(|| need("ids"))?,
            },
            InputKind::Prompt => ProbeInput::Prompt {
                text: f.text.ok_or_else(|| need("text"))?,
                params: f.params.ok_or_else(|| need("params"))?,
            },
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_read_back_as_written_and_misfits_are_named() {
        let inputs = [
            ProbeInput::Image {
                shape: vec![1, 2, 1],
                pixels: vec![0.25, 1.0],
            },
            ProbeInput::Tokens { ids: vec![1, 2, 3] },
            ProbeInput::Prompt {
                text: "hi".into(),
                params: GenerationParams {
                    max_tokens: 8,
                    temperature: 0.0,
                    top_logprobs: 5,
                    seed: Some(1),
                },
            },
        ];
        for input in inputs {
            let json = serde_json::to_string(&input).unwrap();
            assert_eq!(serde_json::from_str::<ProbeInput>(&json).unwrap(), input);
        }
        let fault = |json: &str| {
            serde_json::from_str::<ProbeInput>(json)
                .unwrap_err()
                .to_string()
        };
        assert!(fault(r#"{"kind":"tokens"}"#).contains("missing field `ids`"));
        assert!(fault(r#"{"kind":"tokens","ids":[1],"pixels":[0.5]}"#)
            .contains("field `pixels` does not belong to a tokens input"));
        assert!(fault(r#"{"kind":"audio"}"#).contains("unknown variant `audio`"));
        // Key order does not matter.
        let late_kind = r#"{"ids":[7],"kind":"tokens"}"#;
        assert_eq!(
            serde_json::from_str::<ProbeInput>(late_kind).unwrap(),
            ProbeInput::Tokens { ids: vec![7] }
        );
    }
}
