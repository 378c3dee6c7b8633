//! A llama model's configuration and weights in f32, in Hugging Face's layout (what
//! compressed-tensors checkpoints quantise, row by row): from a GGUF file (dequantised, the query
//! and key projections un-permuted from llama.cpp's rotary layout) or from a Hugging Face
//! safetensors checkpoint (`config.json` + `model.safetensors`).

use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file;
use candle_core::Device;
use hspi_datasets::NumericFormat;

use super::compressed_tensors::{self, Tensors};
pub use super::model_config::ModelConfig;
use crate::error::{CollectError, Result};

/// One decoder layer's matrices (`[out, in]`, row-major) and norms.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub attn_norm: Vec<f32>,
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub o: Vec<f32>,
    pub ffn_norm: Vec<f32>,
    pub gate: Vec<f32>,
    pub up: Vec<f32>,
    pub down: Vec<f32>,
}

impl LayerWeights {
    /// The layer's linear layers by their Hugging Face names, with `(rows, cols)`.
    pub fn linears(&self, c: &ModelConfig) -> [(&'static str, &Vec<f32>, usize, usize); 7] {
        let (h, kv, i) = (c.hidden, c.kv_heads * c.head_dim(), c.intermediate);
        [
            ("self_attn.q_proj", &self.q, h, h),
            ("self_attn.k_proj", &self.k, kv, h),
            ("self_attn.v_proj", &self.v, kv, h),
            ("self_attn.o_proj", &self.o, h, h),
            ("mlp.gate_proj", &self.gate, i, h),
            ("mlp.up_proj", &self.up, i, h),
            ("mlp.down_proj", &self.down, h, i),
        ]
    }
}

#[derive(Debug, Clone)]
pub struct LlamaWeights {
    pub config: ModelConfig,
    /// `[vocab, hidden]`; the output projection too (SmolLM2 ties them).
    pub embed: Vec<f32>,
    /// `[vocab, hidden]` where the model does not tie it to the embeddings.
    pub lm_head: Option<Vec<f32>>,
    pub layers: Vec<LayerWeights>,
    pub final_norm: Vec<f32>,
    /// The format the linear layers' values already are (a compressed-tensors checkpoint's
    /// stored weights and scales, dequantised): they are served at that format only.
    pub quantized: Option<NumericFormat>,
}

fn bad(path: &Path, reason: impl Into<String>) -> CollectError {
    CollectError::BadWeights {
        model: "llama".into(),
        path: path.into(),
        reason: reason.into(),
    }
}

/// llama.cpp's converter stores the query and key rows of each head interleaved for its
/// rotary layout (pairs `2i, 2i+1`); Hugging Face's pairs `i, i + d/2`. Undo it per head.
fn unpermute(w: &[f32], heads: usize, cols: usize) -> Vec<f32> {
    let rows = w.len() / cols;
    let half = rows / heads / 2;
    let mut out = vec![0f32; w.len()];
    for h in 0..heads {
        for i in 0..half {
            for j in 0..2 {
                // GGUF row h·2·half + 2·i + j holds HF row h·2·half + j·half + i.
                let from = (h * 2 * half + 2 * i + j) * cols;
                let to = (h * 2 * half + j * half + i) * cols;
                out[to..to + cols].copy_from_slice(&w[from..from + cols]);
            }
        }
    }
    out
}

/// Refuse a model the llama-only passes (the served path, CUDA) would compute wrongly: another
/// family, rotary scaling (Llama 3's `rope_freqs`, `rope_scaling: llama3`), or a head width of
/// its own. Such a model runs at llama.cpp's formats on the all-positions pass, which computes
/// every family in `super::architecture`.
pub fn llama_only(config: &ModelConfig, rope_scaled: bool, path: &Path, pass: &str) -> Result<()> {
    let refusal = if config.architecture.family != "llama" {
        Some(format!("it is a {} model", config.arch))
    } else if rope_scaled {
        Some("its rotary frequencies are scaled (Llama 3)".to_string())
    } else if config.head_dim * config.heads != config.hidden {
        Some(format!(
            "its heads are {} wide, not hidden / heads",
            config.head_dim
        ))
    } else {
        None
    };
    match refusal {
        Some(why) => Err(CollectError::BadWeights {
            model: format!("a {} model", config.arch),
            path: path.into(),
            reason: format!(
                "{pass} computes plain llama models only and {why}; it runs at llama.cpp's \
                 formats (f32 f16 q8_0 q4_0 q4_1 q6_k q5_k_m q4_k_m)"
            ),
        }),
        None => Ok(()),
    }
}

impl LlamaWeights {
    /// From a GGUF file of the llama architecture, every tensor dequantised to f32.
    pub fn from_gguf(path: &Path) -> Result<LlamaWeights> {
        let mut file = std::fs::File::open(path).map_err(CollectError::io(path))?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| bad(path, e.to_string()))?;
        let config = ModelConfig::from_gguf(&content, path)?;
        let rope_scaled = content.tensor_infos.contains_key("rope_freqs.weight");
        llama_only(
            &config,
            rope_scaled,
            path,
            "the served path (the market's formats)",
        )?;
        let mut tensor = |name: &str| -> Result<(Vec<f32>, Vec<usize>)> {
            let qt = content
                .tensor(&mut file, name, &Device::Cpu)
                .map_err(|e| bad(path, format!("{name}: {e}")))?;
            let t = qt.dequantize(&Device::Cpu)?;
            let dims = t.dims().to_vec();
            Ok((t.flatten_all()?.to_vec1::<f32>()?, dims))
        };
        let hidden = config.hidden;
        let (embed, _) = tensor("token_embd.weight")?;
        let mut layers = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let mut w = |n: &str| tensor(&format!("blk.{l}.{n}.weight")).map(|t| t.0);
            layers.push(LayerWeights {
                attn_norm: w("attn_norm")?,
                q: unpermute(&w("attn_q")?, config.heads, hidden),
                k: unpermute(&w("attn_k")?, config.kv_heads, hidden),
                v: w("attn_v")?,
                o: w("attn_output")?,
                ffn_norm: w("ffn_norm")?,
                gate: w("ffn_gate")?,
                up: w("ffn_up")?,
                down: w("ffn_down")?,
            });
        }
        let lm_head = if content.tensor_infos.contains_key("output.weight") {
            Some(tensor("output.weight")?.0)
        } else {
            None
        };
        let weights = LlamaWeights {
            final_norm: tensor("output_norm.weight")?.0,
            config,
            embed,
            lm_head,
            layers,
            quantized: None,
        };
        weights.check(path)?;
        Ok(weights)
    }

    /// From a Hugging Face checkpoint directory: `config.json` and `model.safetensors` (any float
    /// dtype, read as f32; a compressed-tensors checkpoint's quantised layers dequantised as
    /// their kernels see them, `compressed_tensors`).
    pub fn from_safetensors(dir: &Path) -> Result<LlamaWeights> {
        let config_path = dir.join("config.json");
        let text = std::fs::read_to_string(&config_path).map_err(CollectError::io(&config_path))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(&config_path, e.to_string()))?;
        let config = ModelConfig::from_config_json(&json, &config_path)?;
        let rope_type = |v: &serde_json::Value| v["rope_type"].as_str().map(String::from);
        let rope_scaled = rope_type(&json["rope_scaling"])
            .or_else(|| rope_type(&json["rope_parameters"]))
            .is_some_and(|t| t != "default");
        llama_only(
            &config,
            rope_scaled,
            &config_path,
            "the served path (the market's formats)",
        )?;
        let quantized = compressed_tensors::format_of(&json, &config_path)?;
        let model = dir.join("model.safetensors");
        let bytes = std::fs::read(&model).map_err(CollectError::io(&model))?;
        let st = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| bad(&model, e.to_string()))?;
        let tensors = Tensors { st, path: &model };
        let (h, kv, i) = (
            config.hidden,
            config.kv_heads * config.head_dim(),
            config.intermediate,
        );
        let mut layers = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let name = |n: &str| format!("model.layers.{l}.{n}");
            let norm = |n: &str| tensors.floats(&format!("{}.weight", name(n)), h);
            let linear = |n: &str, rows, cols| tensors.linear(&name(n), quantized, rows, cols);
            layers.push(LayerWeights {
                attn_norm: norm("input_layernorm")?,
                q: linear("self_attn.q_proj", h, h)?,
                k: linear("self_attn.k_proj", kv, h)?,
                v: linear("self_attn.v_proj", kv, h)?,
                o: linear("self_attn.o_proj", h, h)?,
                ffn_norm: norm("post_attention_layernorm")?,
                gate: linear("mlp.gate_proj", i, h)?,
                up: linear("mlp.up_proj", i, h)?,
                down: linear("mlp.down_proj", h, i)?,
            });
        }
        let table = config.vocab * h;
        let tied = json["tie_word_embeddings"].as_bool().unwrap_or(false);
        let lm_head = if tied {
            None
        } else {
            Some(tensors.floats("lm_head.weight", table)?)
        };
        let weights = LlamaWeights {
            embed: tensors.floats("model.embed_tokens.weight", table)?,
            final_norm: tensors.floats("model.norm.weight", h)?,
            config,
            lm_head,
            layers,
            quantized,
        };
        weights.check(&model)?;
        Ok(weights)
    }

    /// Every tensor the size the configuration says.
    fn check(&self, path: &Path) -> Result<()> {
        let c = &self.config;
        if c.heads == 0
            || !c.hidden.is_multiple_of(c.heads)
            || c.kv_heads == 0
            || !c.heads.is_multiple_of(c.kv_heads)
        {
            return Err(bad(
                path,
                format!(
                    "{} heads, {} key-value heads, hidden {}",
                    c.heads, c.kv_heads, c.hidden
                ),
            ));
        }
        let mut sizes: Vec<(String, usize, usize)> = vec![
            ("embeddings".into(), self.embed.len(), c.vocab * c.hidden),
            ("final norm".into(), self.final_norm.len(), c.hidden),
        ];
        if let Some(head) = &self.lm_head {
            sizes.push(("lm_head".into(), head.len(), c.vocab * c.hidden));
        }
        for (l, layer) in self.layers.iter().enumerate() {
            for (name, w, rows, cols) in layer.linears(c) {
                sizes.push((format!("layer {l} {name}"), w.len(), rows * cols));
            }
            sizes.push((
                format!("layer {l} norms"),
                layer.attn_norm.len() + layer.ffn_norm.len(),
                2 * c.hidden,
            ));
        }
        match sizes.into_iter().find(|(_, got, want)| got != want) {
            Some((name, got, want)) => Err(bad(
                path,
                format!("{name}: {got} values where the configuration needs {want}"),
            )),
            None => Ok(()),
        }
    }
}

/// Where a model's weights are: a GGUF file or a Hugging Face checkpoint directory.
pub fn load(path: &Path) -> Result<LlamaWeights> {
    if path.is_dir() {
        LlamaWeights::from_safetensors(path)
    } else {
        LlamaWeights::from_gguf(path)
    }
}

/// Every file of a checkpoint directory hashed in name order, for a model identity; a GGUF file's
/// own hash.
pub fn identity_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(CollectError::io(path))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpermuting_restores_hugging_faces_rotary_pairs() {
        // One head of 4 rows (2 pairs), 1 column: HF rows [a, b, c, d] pair (a, c) and (b, d);
        // llama.cpp stores them as [a, c, b, d].
        let gguf = [1.0, 3.0, 2.0, 4.0];
        assert_eq!(unpermute(&gguf, 1, 1), vec![1.0, 2.0, 3.0, 4.0]);
    }
}
