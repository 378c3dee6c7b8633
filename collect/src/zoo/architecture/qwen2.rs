//! Qwen 2 / 2.5: llama with biases on the query, key and value projections, rotated NeoX-style.

use super::{llama_like, Architecture, ConfigError, Family, RopeStyle, Settings};

pub const FAMILY: Family = Family {
    gguf: "qwen2",
    model_types: &["qwen2"],
    read,
};

fn read(_: &dyn Settings) -> Result<Architecture, ConfigError> {
    Ok(Architecture {
        qkv_bias: true,
        ..llama_like("qwen2", RopeStyle::Neox)
    })
}
