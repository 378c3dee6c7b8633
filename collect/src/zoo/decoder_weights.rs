//! A decoder's configuration and weights in f32, in Hugging Face's layout (what
//! compressed-tensors checkpoints quantise, row by row), for every dense family in
//! `super::architecture` (llama with Llama 3's rotary scaling, mistral, qwen2, qwen3, gemma3):
//! from a GGUF file (dequantised, llama's query and key projections un-permuted from llama.cpp's
//! rotary layout) or from a Hugging Face safetensors checkpoint (`config.json` +
//! `model.safetensors`). Norm weights are held as checkpoints store them (gemma's `w` of `1 + w`:
//! llama.cpp's converter stores `1 + w`, taken back here).

use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file;
use candle_core::Device;
use hspi_datasets::NumericFormat;

use super::architecture::RopeStyle;
use super::compressed_tensors::{self, Tensors};
pub use super::model_config::ModelConfig;
use crate::error::{CollectError, Result};

/// One decoder layer's matrices (`[out, in]`, row-major), norms and what its family adds.
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
    /// The query, key and value biases (qwen2).
    pub qkv_bias: Option<[Vec<f32>; 3]>,
    /// Each head's query and key norm (qwen3, gemma3), `head_dim` wide.
    pub qk_norm: Option<[Vec<f32>; 2]>,
    /// The norms after attention and after the MLP (gemma3).
    pub post_norms: Option<[Vec<f32>; 2]>,
}

impl LayerWeights {
    /// The layer's linear layers by their Hugging Face names, with `(rows, cols)`.
    pub fn linears(&self, c: &ModelConfig) -> [(&'static str, &Vec<f32>, usize, usize); 7] {
        let (h, i) = (c.hidden, c.intermediate);
        let (q, kv) = (c.heads * c.head_dim(), c.kv_heads * c.head_dim());
        [
            ("self_attn.q_proj", &self.q, q, h),
            ("self_attn.k_proj", &self.k, kv, h),
            ("self_attn.v_proj", &self.v, kv, h),
            ("self_attn.o_proj", &self.o, h, q),
            ("mlp.gate_proj", &self.gate, i, h),
            ("mlp.up_proj", &self.up, i, h),
            ("mlp.down_proj", &self.down, h, i),
        ]
    }

    /// Every norm's weights.
    fn norms_mut(&mut self) -> Vec<&mut Vec<f32>> {
        let mut out = vec![&mut self.attn_norm, &mut self.ffn_norm];
        out.extend(self.qk_norm.iter_mut().flatten());
        out.extend(self.post_norms.iter_mut().flatten());
        out
    }

    /// Every vector besides the matrices, with the length the configuration gives it.
    fn vectors(&self, c: &ModelConfig) -> Vec<(&'static str, &Vec<f32>, usize)> {
        let (q, kv, d) = (
            c.heads * c.head_dim(),
            c.kv_heads * c.head_dim(),
            c.head_dim(),
        );
        let mut out = vec![
            ("input norm", &self.attn_norm, c.hidden),
            ("MLP norm", &self.ffn_norm, c.hidden),
        ];
        if let Some([bq, bk, bv]) = &self.qkv_bias {
            out.extend([("q bias", bq, q), ("k bias", bk, kv), ("v bias", bv, kv)]);
        }
        if let Some([nq, nk]) = &self.qk_norm {
            out.extend([("q norm", nq, d), ("k norm", nk, d)]);
        }
        if let Some([pa, pf]) = &self.post_norms {
            out.extend([
                ("post-attention norm", pa, c.hidden),
                ("post-MLP norm", pf, c.hidden),
            ]);
        }
        out
    }
}

#[derive(Debug, Clone)]
pub struct DecoderWeights {
    pub config: ModelConfig,
    /// `[vocab, hidden]`; the output projection too where tied (SmolLM2, Gemma).
    pub embed: Vec<f32>,
    /// `[vocab, hidden]` where the model does not tie it to the embeddings.
    pub lm_head: Option<Vec<f32>>,
    pub layers: Vec<LayerWeights>,
    pub final_norm: Vec<f32>,
    /// The format the linear layers' values already are (a compressed-tensors checkpoint's
    /// stored weights and scales, dequantised): they are served at that format only.
    pub quantized: Option<NumericFormat>,
    /// Each rotary pair's inverse frequency where the model scales them (Llama 3), for the full
    /// attention layers' base.
    pub rope_inv_freq: Option<Vec<f32>>,
}

fn bad(path: &Path, reason: impl Into<String>) -> CollectError {
    CollectError::BadWeights {
        model: "a decoder".into(),
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

/// A gemma norm's `1 + w` as llama.cpp's converter stores it, back to the checkpoint's `w` (exact
/// in f32: subtracting 1 from a value of 1/2 or more rounds nothing).
fn checkpoint_norm(w: &mut [f32]) {
    w.iter_mut().for_each(|v| *v -= 1.0);
}

/// Refuse what the served path does not compute: a mixture of experts (vLLM's fused-MoE
/// kernels' numerics are not reproduced).
fn served(config: &ModelConfig, path: &Path) -> Result<()> {
    match config.architecture.experts {
        Some(_) => Err(CollectError::BadWeights {
            model: format!("a {} model", config.arch),
            path: path.into(),
            reason: format!(
                "the served path (the market's formats) computes dense models only and it is a \
                 {} mixture of experts; it runs at llama.cpp's formats (f32 f16 q8_0 q4_0 q4_1 \
                 q6_k q5_k_m q4_k_m)",
                config.arch
            ),
        }),
        None => Ok(()),
    }
}

/// The position a rotation turns by: divided by the linear scaling's factor where the layer has
/// one (vLLM's `LinearScalingRotaryEmbedding`).
pub fn rotary_position(position: usize, linear: Option<f32>) -> f32 {
    match linear {
        Some(factor) => position as f32 / factor,
        None => position as f32,
    }
}

/// The rotary inverse frequencies `1 / base^(2i/d)` in f32, as vLLM's `_compute_inv_freq`.
pub fn inverse_frequencies(base: f32, head_dim: usize) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| 1.0 / base.powf((2 * i) as f32 / head_dim as f32))
        .collect()
}

/// Llama 3's scaled frequencies as vLLM's `Llama3RotaryEmbedding` computes them from
/// `rope_scaling` (or transformers 5's `rope_parameters`), where its type is `llama3`.
fn llama3_frequencies(json: &serde_json::Value, config: &ModelConfig) -> Option<Vec<f32>> {
    let p = [&json["rope_scaling"], &json["rope_parameters"]]
        .into_iter()
        .find(|p| p["rope_type"].as_str().or(p["type"].as_str()) == Some("llama3"))?;
    let num = |k: &str, default: f64| p[k].as_f64().unwrap_or(default) as f32;
    let (factor, low, high) = (
        num("factor", 8.0),
        num("low_freq_factor", 1.0),
        num("high_freq_factor", 4.0),
    );
    let original = num("original_max_position_embeddings", 8192.0);
    let (low_wavelen, high_wavelen) = (original / low, original / high);
    let pi = std::f32::consts::PI;
    Some(
        inverse_frequencies(config.rope_theta, config.head_dim())
            .into_iter()
            .map(|f| {
                let wavelen = 2.0 * pi / f;
                let smooth = match low != high {
                    true => (original / wavelen - low) / (high - low),
                    false => 0.0,
                };
                if wavelen < high_wavelen {
                    f
                } else if wavelen > low_wavelen {
                    f / factor
                } else {
                    (1.0 - smooth) * f / factor + smooth * f
                }
            })
            .collect(),
    )
}

impl DecoderWeights {
    /// From a GGUF file of a dense family, every tensor dequantised to f32.
    pub fn from_gguf(path: &Path) -> Result<DecoderWeights> {
        let mut file = std::fs::File::open(path).map_err(CollectError::io(path))?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| bad(path, e.to_string()))?;
        let config = ModelConfig::from_gguf(&content, path)?;
        served(&config, path)?;
        let mut tensor = |name: &str| -> Result<(Vec<f32>, Vec<usize>)> {
            let qt = content
                .tensor(&mut file, name, &Device::Cpu)
                .map_err(|e| bad(path, format!("{name}: {e}")))?;
            let t = qt.dequantize(&Device::Cpu)?;
            let dims = t.dims().to_vec();
            Ok((t.flatten_all()?.to_vec1::<f32>()?, dims))
        };
        let hidden = config.hidden;
        let a = config.architecture.clone();
        // llama's GGUF rows are permuted for llama.cpp's rotation; the NEOX families' are not.
        let rows = |w: Vec<f32>, heads: usize| match a.gguf_rope {
            RopeStyle::Interleaved => unpermute(&w, heads, hidden),
            RopeStyle::Neox => w,
        };
        let (embed, _) = tensor("token_embd.weight")?;
        let mut layers = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let mut w = |n: &str| tensor(&format!("blk.{l}.{n}.weight")).map(|t| t.0);
            let mut layer = LayerWeights {
                attn_norm: w("attn_norm")?,
                q: rows(w("attn_q")?, config.heads),
                k: rows(w("attn_k")?, config.kv_heads),
                v: w("attn_v")?,
                o: w("attn_output")?,
                ffn_norm: w("ffn_norm")?,
                gate: w("ffn_gate")?,
                up: w("ffn_up")?,
                down: w("ffn_down")?,
                qkv_bias: None,
                qk_norm: None,
                post_norms: None,
            };
            if a.qk_norm {
                layer.qk_norm = Some([w("attn_q_norm")?, w("attn_k_norm")?]);
            }
            if a.sandwich_norms {
                layer.post_norms = Some([w("post_attention_norm")?, w("post_ffw_norm")?]);
            }
            if a.qkv_bias {
                let mut b = |n: &str| tensor(&format!("blk.{l}.{n}.bias")).map(|t| t.0);
                layer.qkv_bias = Some([b("attn_q")?, b("attn_k")?, b("attn_v")?]);
            }
            if a.unit_offset_norms {
                layer
                    .norms_mut()
                    .into_iter()
                    .for_each(|n| checkpoint_norm(n));
            }
            layers.push(layer);
        }
        let lm_head = if content.tensor_infos.contains_key("output.weight") {
            Some(tensor("output.weight")?.0)
        } else {
            None
        };
        // Llama 3's divisor per rotary pair (`rope_freqs`, written by the converter).
        let rope_inv_freq = match content.tensor_infos.contains_key("rope_freqs.weight") {
            true => {
                let divisors = tensor("rope_freqs.weight")?.0;
                let base = inverse_frequencies(config.rope_theta, config.head_dim());
                Some(base.iter().zip(&divisors).map(|(f, d)| f / d).collect())
            }
            false => None,
        };
        let mut final_norm = tensor("output_norm.weight")?.0;
        if a.unit_offset_norms {
            checkpoint_norm(&mut final_norm);
        }
        let weights = DecoderWeights {
            final_norm,
            config,
            embed,
            lm_head,
            layers,
            quantized: None,
            rope_inv_freq,
        };
        weights.check(path)?;
        Ok(weights)
    }

    /// From a Hugging Face checkpoint directory: `config.json` and `model.safetensors` (any float
    /// dtype, read as f32; a compressed-tensors checkpoint's quantised layers dequantised as
    /// their kernels see them, `compressed_tensors`).
    pub fn from_safetensors(dir: &Path) -> Result<DecoderWeights> {
        let config_path = dir.join("config.json");
        let text = std::fs::read_to_string(&config_path).map_err(CollectError::io(&config_path))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(&config_path, e.to_string()))?;
        let config = ModelConfig::from_config_json(&json, &config_path)?;
        served(&config, &config_path)?;
        // Scalings other than Llama 3's were refused by name with the configuration.
        let rope_inv_freq = llama3_frequencies(&json, &config);
        let quantized = compressed_tensors::format_of(&json, &config_path)?;
        let model = dir.join("model.safetensors");
        let bytes = std::fs::read(&model).map_err(CollectError::io(&model))?;
        let st = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| bad(&model, e.to_string()))?;
        let tensors = Tensors { st, path: &model };
        let a = config.architecture.clone();
        let (h, i, d) = (config.hidden, config.intermediate, config.head_dim());
        let (q, kv) = (config.heads * d, config.kv_heads * d);
        let mut layers = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let name = |n: &str| format!("model.layers.{l}.{n}");
            let norm = |n: &str, len: usize| tensors.floats(&format!("{}.weight", name(n)), len);
            let linear = |n: &str, rows, cols| tensors.linear(&name(n), quantized, rows, cols);
            // gemma3's MLP norm is `pre_feedforward_layernorm`; its `post_attention_layernorm`
            // follows attention.
            let ffn_norm = match a.sandwich_norms {
                true => "pre_feedforward_layernorm",
                false => "post_attention_layernorm",
            };
            let bias = |n: &str, len: usize| tensors.floats(&format!("{}.bias", name(n)), len);
            layers.push(LayerWeights {
                attn_norm: norm("input_layernorm", h)?,
                q: linear("self_attn.q_proj", q, h)?,
                k: linear("self_attn.k_proj", kv, h)?,
                v: linear("self_attn.v_proj", kv, h)?,
                o: linear("self_attn.o_proj", h, q)?,
                ffn_norm: norm(ffn_norm, h)?,
                gate: linear("mlp.gate_proj", i, h)?,
                up: linear("mlp.up_proj", i, h)?,
                down: linear("mlp.down_proj", h, i)?,
                qkv_bias: match a.qkv_bias {
                    true => Some([
                        bias("self_attn.q_proj", q)?,
                        bias("self_attn.k_proj", kv)?,
                        bias("self_attn.v_proj", kv)?,
                    ]),
                    false => None,
                },
                qk_norm: match a.qk_norm {
                    true => Some([norm("self_attn.q_norm", d)?, norm("self_attn.k_norm", d)?]),
                    false => None,
                },
                post_norms: match a.sandwich_norms {
                    true => Some([
                        norm("post_attention_layernorm", h)?,
                        norm("post_feedforward_layernorm", h)?,
                    ]),
                    false => None,
                },
            });
        }
        let table = config.vocab * h;
        // Tied where the config says so, or names nothing and the checkpoint holds no head.
        let tied = json["tie_word_embeddings"]
            .as_bool()
            .unwrap_or(!tensors.has("lm_head.weight"));
        let lm_head = if tied {
            None
        } else {
            Some(tensors.floats("lm_head.weight", table)?)
        };
        let weights = DecoderWeights {
            embed: tensors.floats("model.embed_tokens.weight", table)?,
            final_norm: tensors.floats("model.norm.weight", h)?,
            config,
            lm_head,
            layers,
            quantized,
            rope_inv_freq,
        };
        weights.check(&model)?;
        Ok(weights)
    }

    /// Every tensor the size the configuration says.
    fn check(&self, path: &Path) -> Result<()> {
        let c = &self.config;
        if c.heads == 0
            || c.head_dim() == 0
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
            for (name, v, len) in layer.vectors(c) {
                sizes.push((format!("layer {l} {name}"), v.len(), len));
            }
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
pub fn load(path: &Path) -> Result<DecoderWeights> {
    if path.is_dir() {
        DecoderWeights::from_safetensors(path)
    } else {
        DecoderWeights::from_gguf(path)
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
