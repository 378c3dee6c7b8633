//! Qwen 3 (dense): llama with an RMSNorm over each head's queries and keys before the rotation,
//! no biases, a head width of its own (`attention.key_length`, `head_dim`), rotated NeoX-style.

use super::{llama_like, Architecture, ConfigError, Family, RopeStyle, Settings};

pub const FAMILY: Family = Family {
    gguf: "qwen3",
    model_types: &["qwen3"],
    read,
};

fn read(_: &dyn Settings) -> Result<Architecture, ConfigError> {
    Ok(Architecture {
        qk_norm: true,
        ..llama_like("qwen3", RopeStyle::Neox)
    })
}
