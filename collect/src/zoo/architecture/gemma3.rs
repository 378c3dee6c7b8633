//! Gemma 3 (text): embeddings scaled by √hidden, norms before and after both attention and the
//! MLP, q/k norms, a GELU-tanh gated MLP, and sliding-window layers (5 of every 6) with a rotary
//! base of their own. As llama.cpp reads it (`src/models/gemma3.cpp`): the GGUF norm weights
//! already hold Gemma's `1 + w`, the window pattern is 6 where the file names none, the windowed
//! layers' base is `rope.freq_base_swa` (10,000 by default), and queries are scaled by
//! 1/√head_dim (the 27B model's 1/√(hidden/heads) is not handled).

use super::Activation;
use super::{
    llama_like, Architecture, ConfigError, Family, Key, RopeStyle, Settings, SlidingWindow,
};

pub const FAMILY: Family = Family {
    gguf: "gemma3",
    model_types: &["gemma3_text", "gemma3"],
    read,
};

const WINDOW: Key = Key {
    gguf: "attention.sliding_window",
    json: &["sliding_window"],
};
const PATTERN: Key = Key {
    gguf: "attention.sliding_window_pattern",
    json: &["sliding_window_pattern"],
};
const LOCAL_BASE: Key = Key {
    gguf: "rope.freq_base_swa",
    // Alternatives, each a dotted path: transformers 5 nests it per attention type, Gemma's
    // own checkpoints name it `rope_local_base_freq`.
    json: &[
        "rope_parameters.sliding_attention.rope_theta",
        "rope_local_base_freq",
    ],
};

fn read(settings: &dyn Settings) -> Result<Architecture, ConfigError> {
    let sliding = match settings.count(WINDOW)? {
        Some(window) if window > 0 => Some(SlidingWindow {
            window,
            pattern: settings.count(PATTERN)?.unwrap_or(6).max(1),
            rope_theta: settings.float(LOCAL_BASE)?.unwrap_or(10_000.0),
        }),
        _ => None,
    };
    Ok(Architecture {
        qk_norm: true,
        scaled_embeddings: true,
        sandwich_norms: true,
        activation: Activation::GeluTanh,
        sliding,
        unit_offset_norms: true,
        ..llama_like("gemma3", RopeStyle::Neox)
    })
}
