//! Llama (and Mistral, which llama.cpp converts to the same architecture): the plain pre-norm
//! decoder every other family is told apart from. Llama 3.x's per-band rotary scaling is in the
//! weights (`rope_freqs.weight`), not here.

use super::{llama_like, Architecture, ConfigError, Family, RopeStyle, Settings};

pub const FAMILY: Family = Family {
    gguf: "llama",
    model_types: &["llama", "mistral"],
    read,
};

fn read(_: &dyn Settings) -> Result<Architecture, ConfigError> {
    Ok(llama_like("llama", RopeStyle::Interleaved))
}
