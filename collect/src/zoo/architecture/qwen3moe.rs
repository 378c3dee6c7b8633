//! Qwen 3 mixture of experts: qwen3's attention (q/k norms, NeoX rotation, a head width of its
//! own); every layer's MLP is `expert_count` SwiGLU experts of width `expert_feed_forward_length`,
//! of which a router picks `expert_used_count` per token. As llama.cpp computes it
//! (`src/models/qwen3moe.cpp`, `build_moe_ffn`): the router's logits through a softmax, the top
//! experts by probability, their probabilities normalised to sum to 1 (Qwen3-MoE checkpoints set
//! `norm_topk_prob`), each expert's output scaled by its weight and the experts summed in order
//! of probability. Which experts a token goes to depends on the router's logits to the last bit
//! near a tie: a flipped choice moves the answer, evidence like any other rounding.

use super::{llama_like, Architecture, ConfigError, Experts, Family, Key, RopeStyle, Settings};

pub const FAMILY: Family = Family {
    gguf: "qwen3moe",
    model_types: &["qwen3_moe"],
    read,
};

const COUNT: Key = Key {
    gguf: "expert_count",
    // transformers 5 writes `num_local_experts`, earlier versions (and Qwen's checkpoints)
    // `num_experts`.
    json: &["num_experts", "num_local_experts"],
};
const USED: Key = Key {
    gguf: "expert_used_count",
    json: &["num_experts_per_tok"],
};
const WIDTH: Key = Key {
    gguf: "expert_feed_forward_length",
    json: &["moe_intermediate_size"],
};

fn read(settings: &dyn Settings) -> Result<Architecture, ConfigError> {
    let required = |key: Key| -> Result<usize, ConfigError> {
        settings.count(key)?.ok_or_else(|| ConfigError::Missing {
            gguf: key.gguf.into(),
            json: key.json.join(" or "),
        })
    };
    let (count, used) = (required(COUNT)?, required(USED)?);
    if used == 0 || used > count {
        return Err(ConfigError::BadValue {
            key: USED.gguf.into(),
            reason: format!("{used} experts used of {count}"),
        });
    }
    Ok(Architecture {
        qk_norm: true,
        experts: Some(Experts {
            count,
            used,
            width: required(WIDTH)?,
        }),
        ..llama_like("qwen3moe", RopeStyle::Neox)
    })
}
