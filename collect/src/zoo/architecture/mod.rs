//! The architecture families hspi computes, one file each, as candle-transformers keeps one
//! module per model: what a family's forward pass does differently from llama's, read from the
//! same settings (a GGUF file's metadata or a checkpoint's `config.json`, through [`Settings`]).
//! Every forward pass takes the [`Architecture`] a model's [`super::model_config::ModelConfig`]
//! carries, never the family's name.
//!
//! A new family is one file here and one line in [`FAMILIES`] (CONTRIBUTING.md).

mod gemma3;
mod llama;
mod qwen2;
mod qwen3;
mod qwen3moe;

/// What a decoder's forward pass does differently from llama's.
#[derive(Debug, Clone, PartialEq)]
pub struct Architecture {
    /// The family's GGUF name (`general.architecture`).
    pub family: &'static str,
    /// How llama.cpp rotates query and key pairs in this family's GGUF files.
    pub gguf_rope: RopeStyle,
    /// Biases on the query, key and value projections (qwen2).
    pub qkv_bias: bool,
    /// RMSNorm over each head's queries and keys before the rotation (qwen3, gemma3).
    pub qk_norm: bool,
    /// Token embeddings multiplied by √hidden on the way in (gemma).
    pub scaled_embeddings: bool,
    /// Norms after attention and after the MLP too, before each residual add (gemma3).
    pub sandwich_norms: bool,
    /// The gate's activation in the gated MLP.
    pub activation: Activation,
    /// Layers that attend over a window only, with a rotary base of their own (gemma3).
    pub sliding: Option<SlidingWindow>,
    /// Every layer's MLP a mixture of experts (qwen3moe).
    pub experts: Option<Experts>,
    /// Norms multiply by `1 + w`, `w` as checkpoints store it (gemma; llama.cpp's converter stores
    /// `1 + w` in GGUF files), in f32 before one rounding in vLLM's `GemmaRMSNorm`.
    pub unit_offset_norms: bool,
}

/// A mixture-of-experts MLP: `count` gated MLPs of width `width`, of which a router picks the
/// `used` most probable for each token, weighted by their probabilities normalised to sum to 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Experts {
    pub count: usize,
    pub used: usize,
    pub width: usize,
}

/// Which query and key elements a rotation pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Pairs `2i, 2i + 1` (llama.cpp's NORM: its converter permutes llama's q and k rows).
    Interleaved,
    /// Pairs `i, i + d/2` (NEOX, Hugging Face's `rotate_half`).
    Neox,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    Silu,
    /// GELU with the tanh approximation (`gelu_pytorch_tanh`).
    GeluTanh,
}

/// Windowed attention: every layer but each `pattern`-th attends to the last `window` positions
/// only (itself included), and rotates with `rope_theta`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlidingWindow {
    pub window: usize,
    pub pattern: usize,
    pub rope_theta: f32,
}

impl SlidingWindow {
    /// Whether `layer` (from 0) is windowed: llama.cpp's dense-last pattern, as Gemma 3's
    /// `layer_types` lay them out.
    pub fn windowed(&self, layer: usize) -> bool {
        !(layer + 1).is_multiple_of(self.pattern)
    }
}

/// A model's settings by name, wherever they are stored: a GGUF file's metadata (under the
/// architecture's prefix) or a `config.json`.
pub trait Settings {
    /// The count under `key`, when given.
    fn count(&self, key: Key) -> Result<Option<usize>, ConfigError>;
    /// The number under `key`, when given.
    fn float(&self, key: Key) -> Result<Option<f32>, ConfigError>;
}

/// One setting's name in a GGUF file (after `ARCH.`) and in `config.json` (a path of keys).
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub gguf: &'static str,
    pub json: &'static [&'static str],
}

/// A family: its GGUF name, the `config.json` model types it covers, and how it reads the
/// settings that make its forward pass differ.
#[derive(Debug)]
pub struct Family {
    pub gguf: &'static str,
    pub model_types: &'static [&'static str],
    pub read: fn(&dyn Settings) -> Result<Architecture, ConfigError>,
}

/// Every family hspi computes.
pub const FAMILIES: &[Family] = &[
    llama::FAMILY,
    qwen2::FAMILY,
    qwen3::FAMILY,
    qwen3moe::FAMILY,
    gemma3::FAMILY,
];

/// The family a GGUF file's `general.architecture` names.
pub fn of_gguf(name: &str) -> Result<&'static Family, ConfigError> {
    FAMILIES
        .iter()
        .find(|f| f.gguf == name)
        .ok_or_else(|| unknown(name))
}

/// The family a `config.json`'s `model_type` names.
pub fn of_model_type(name: &str) -> Result<&'static Family, ConfigError> {
    FAMILIES
        .iter()
        .find(|f| f.model_types.contains(&name))
        .ok_or_else(|| unknown(name))
}

fn unknown(name: &str) -> ConfigError {
    let known: Vec<String> = FAMILIES.iter().map(|f| f.model_types.join("/")).collect();
    ConfigError::UnknownArchitecture {
        name: name.into(),
        known: known.join(", "),
    }
}

/// What is wrong with a model's settings.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("architecture '{name}' is not one hspi computes (known: {known})")]
    UnknownArchitecture { name: String, known: String },
    #[error("no {gguf} ({json}) in its settings")]
    Missing { gguf: String, json: String },
    #[error("{key}: {reason}")]
    BadValue { key: String, reason: String },
    #[error("attention.head_count is 0")]
    NoHeads,
    #[error(
        "its rotary embedding is scaled ('{kind}', factor {factor}), which hspi does not compute \
         (it computes unscaled and linearly scaled rotary embeddings and Llama 3's frequencies)"
    )]
    RotaryScaling { kind: String, factor: f32 },
}

/// llama's forward pass: what every family starts from.
fn llama_like(family: &'static str, gguf_rope: RopeStyle) -> Architecture {
    Architecture {
        family,
        gguf_rope,
        qkv_bias: false,
        qk_norm: false,
        scaled_embeddings: false,
        sandwich_norms: false,
        activation: Activation::Silu,
        sliding: None,
        experts: None,
        unit_offset_norms: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_found_by_either_name_and_unknown_ones_are_named() {
        assert_eq!(of_gguf("qwen3").unwrap().gguf, "qwen3");
        assert_eq!(of_model_type("mistral").unwrap().gguf, "llama");
        assert_eq!(of_model_type("gemma3_text").unwrap().gguf, "gemma3");
        assert_eq!(of_model_type("qwen3_moe").unwrap().gguf, "qwen3moe");
        let e = of_gguf("phi3").unwrap_err().to_string();
        assert!(e.contains("'phi3'") && e.contains("qwen2"), "{e}");
    }

    #[test]
    fn gemma3s_last_layer_of_every_six_attends_to_everything() {
        let s = SlidingWindow {
            window: 512,
            pattern: 6,
            rope_theta: 10_000.0,
        };
        let windowed: Vec<bool> = (0..12).map(|l| s.windowed(l)).collect();
        assert_eq!(windowed.iter().filter(|w| !**w).count(), 2);
        assert!(!windowed[5] && !windowed[11] && windowed[0] && windowed[6]);
    }
}
