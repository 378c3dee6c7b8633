//! A GGUF language model of any family hspi computes (`crate::zoo::architecture`: llama, qwen2,
//! qwen3, gemma3) on candle's quantized kernels that returns the logits of every position
//! from one causal pass: teacher forcing on a provider's tokens reads the weights once per answer
//! instead of once per generated token (decoding a 135M model is memory-bound: 8 positions cost
//! about 8 reads of every weight, one pass about one). The layers follow candle's quantized llama
//! (candle-transformers' `quantized_llama`, which returns the last position only; its float
//! products are hspi's own here, `super::float_product`), with what each family does
//! differently as llama.cpp computes it: biases,
//! q/k norms, scaled embeddings, norms around attention and the MLP, GELU-tanh, sliding-window
//! layers with their own rotary base, and Llama 3's per-band rotary divisors (`rope_freqs`). Other formats are made by requantising the file's matrices in memory to
//! the mix `llama-quantize` writes for that file type (`super::llama_file_type`: the output head
//! and the token embeddings at its type, rows that fit no block at the fallback type), and the
//! quantised ones kept in a file the caller names, so the next load reads them instead.

use std::collections::HashMap;
use std::path::Path;

use std::sync::Arc;

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use hspi_datasets::NumericFormat;

use super::float_product::{self, Panels, Weights};
use super::kept_weight::{self, KeptMatrix, KeptTable};
use super::kv_cache::KvRounding;
use super::llama_file_type::{self, ggml_type, tensor_type, Role};
use crate::error::{CollectError, Result};
use crate::zoo::architecture::{Activation, Architecture, RopeStyle};
use crate::zoo::model_config::ModelConfig;

struct Layer {
    q: KeptMatrix,
    k: KeptMatrix,
    v: KeptMatrix,
    o: KeptMatrix,
    mlp: Mlp,
    attn_norm: RmsNorm,
    ffn_norm: RmsNorm,
    /// The query, key and value biases (qwen2).
    qkv_bias: Option<[Tensor; 3]>,
    /// Each head's query and key norms (qwen3, gemma3).
    qk_norm: Option<[RmsNorm; 2]>,
    /// The norms after attention and after the MLP (gemma3).
    post_norms: Option<[RmsNorm; 2]>,
    /// The positions it attends over (itself included) where windowed, and the rotation it
    /// turns with.
    window: Option<usize>,
    rope: Rotation,
}

/// A layer's rotary base and llama.cpp's `freq_scale` (1 / linear scaling's factor, 1 where
/// unscaled): its angles are `freq_scale · (position · base^(-2i/d))`.
#[derive(Clone, Copy)]
struct Rotation {
    base: f32,
    freq_scale: f32,
}

impl Rotation {
    fn key(self) -> (u32, u32) {
        (self.base.to_bits(), self.freq_scale.to_bits())
    }
}

/// A layer's gated MLP: one, or a mixture of experts.
enum Mlp {
    Dense {
        gate: KeptMatrix,
        up: KeptMatrix,
        down: KeptMatrix,
    },
    Experts(MixtureOfExperts),
}

/// Every expert's gate, up and down matrices, and the router (`ffn_gate_inp`, kept at its file
/// type as llama-quantize keeps it), picking `used` experts per token.
struct MixtureOfExperts {
    router: Panels,
    gate: Vec<KeptMatrix>,
    up: Vec<KeptMatrix>,
    down: Vec<KeptMatrix>,
    used: usize,
}

pub struct GgufAllPositions {
    embed: KeptTable,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: KeptMatrix,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    architecture: Architecture,
    /// √hidden, the embeddings' factor where the family scales them.
    embedding_scale: Option<f64>,
    /// Llama 3's divisor of each rotary frequency (`rope_freqs.weight`), where the file has it.
    rope_freqs: Option<Vec<f32>>,
    /// The KV cache's rounding, where the format quantises it (`f16+kv-q8_0`).
    kv_cache: Option<KvRounding>,
    /// A prefix several contexts share, with every layer's keys and values for it.
    prefix: Option<(Vec<u32>, Vec<KeyValues>)>,
    /// The last context scored, to find the prefix the next one shares with it.
    last: Vec<u32>,
}

/// One layer's keys and values (`[1, kv heads, positions, head dim]`, after the rotation).
type KeyValues = (Tensor, Tensor);

/// Shortest shared prefix worth keeping keys and values for.
const MIN_PREFIX: usize = 8;

/// Every block's matrices, by their GGUF names (`blk.N.NAME.weight`): attention's, then the
/// MLP's ([`DENSE_MLP`] or [`EXPERT_MLP`]).
const ATTENTION: [&str; 4] = ["attn_q", "attn_k", "attn_v", "attn_output"];
const DENSE_MLP: [&str; 3] = ["ffn_gate", "ffn_up", "ffn_down"];
/// A mixture of experts' stacked matrices (`[experts, rows, cols]`).
const EXPERT_MLP: [&str; 3] = ["ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"];

/// The formats this engine computes: candle's GGUF formats and the llama.cpp file types it
/// requantises to as `llama-quantize` does (the K-quant mixes, with ggml's own quantisers).
pub fn formats() -> Vec<NumericFormat> {
    use hspi_datasets::GgufType::{Q4KM, Q5KM, Q6K};
    let mut formats = super::llama_file_type::candle_formats();
    formats.extend([Q6K, Q5KM, Q4KM].map(NumericFormat::Gguf));
    formats
}

/// Whether candle keeps matrices of this type as plain (dequantised) tensors.
fn is_float(t: GgmlDType) -> bool {
    matches!(t, GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16)
}

/// One matrix to requantise: its name in the model, the source tensor it is made from, and the
/// type the file type gives it.
struct Requantised {
    name: String,
    from: String,
    dtype: GgmlDType,
}

/// The requantised matrices kept in `kept`, when it holds every one of `matrices` at its type in
/// the source's shape; None otherwise (absent, cut short, another format or mix), and they are
/// made again.
fn read_kept(
    kept: &Path,
    source: &gguf_file::Content,
    matrices: &[Requantised],
) -> Option<HashMap<String, QTensor>> {
    let mut file = std::fs::File::open(kept).ok()?;
    let content = gguf_file::Content::read(&mut file).ok()?;
    let mut out = HashMap::new();
    for Requantised { name, from, dtype } in matrices {
        let (info, theirs) = (
            content.tensor_infos.get(name)?,
            source.tensor_infos.get(from)?,
        );
        if info.ggml_dtype != *dtype || info.shape.dims() != theirs.shape.dims() {
            return None;
        }
        out.insert(
            name.clone(),
            content.tensor(&mut file, name, &Device::Cpu).ok()?,
        );
    }
    Some(out)
}

/// Write the requantised matrices to `kept`, whole or not at all.
fn write_kept(kept: &Path, matrices: &HashMap<String, QTensor>) -> std::io::Result<()> {
    let mut names: Vec<&String> = matrices.keys().collect();
    names.sort();
    let tensors: Vec<(&str, &QTensor)> =
        names.iter().map(|n| (n.as_str(), &matrices[*n])).collect();
    super::kept_weight::write_whole(kept, |w| {
        gguf_file::write(w, &[], &tensors).map_err(std::io::Error::other)
    })
}

/// An RMS norm over the last dimension with a GGUF weight (candle's `rms_norm`, as candle's
/// quantized llama normalises).
struct RmsNorm {
    weight: Tensor,
    eps: f32,
}

impl RmsNorm {
    fn from_qtensor(weight: QTensor, eps: f64) -> Result<RmsNorm> {
        Ok(RmsNorm {
            weight: weight.dequantize(&Device::Cpu)?,
            eps: eps as f32,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(candle_nn::ops::rms_norm(x, &self.weight, self.eps)?)
    }
}

/// Which types a requantised file's matrices take.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mix {
    /// The mix `llama-quantize` writes for the file type, quantised as llama.cpp rounds.
    LlamaQuantize,
    /// Every matrix at the format itself, quantised as candle rounds.
    Uniform,
}

/// A gated MLP: `down(act(gate(x)) · up(x))`.
fn gated(
    activation: Activation,
    gate: &KeptMatrix,
    up: &KeptMatrix,
    down: &KeptMatrix,
    x: &Tensor,
) -> Result<Tensor> {
    let g = gate.forward(x)?;
    let g = match activation {
        Activation::Silu => candle_nn::ops::silu(&g)?,
        Activation::GeluTanh => g.gelu()?,
    };
    down.forward(&(g * up.forward(x)?)?)
}

impl MixtureOfExperts {
    /// The experts' output for every position of `x` (`[1, positions, hidden]`), as llama.cpp's
    /// `build_moe_ffn` computes it: the router's softmax, the `used` most probable experts (ties
    /// to the lower index), their probabilities normalised to sum to 1, each chosen expert's
    /// output times its weight, summed from the most probable down.
    fn forward(&self, activation: Activation, x: &Tensor) -> Result<Tensor> {
        let (_, positions, hidden) = x.dims3()?;
        let rows = x.squeeze(0)?;
        let scores = self.router.linear(&rows)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let probs: Vec<Vec<f32>> = probs.to_vec2()?;
        // Per position, its chosen experts from the most probable, with their weights.
        let chosen: Vec<Vec<(usize, f32)>> = probs
            .iter()
            .map(|p| {
                let mut order: Vec<usize> = (0..p.len()).collect();
                order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
                order.truncate(self.used);
                let sum: f32 = order.iter().map(|&e| p[e]).sum();
                order.into_iter().map(|e| (e, p[e] / sum)).collect()
            })
            .collect();
        // Each expert computes the positions routed to it at once; each slot's outputs apart,
        // summed in slot order.
        let mut slots = vec![vec![0f32; positions * hidden]; self.used];
        for e in 0..self.gate.len() {
            let routed: Vec<(usize, usize, f32)> = chosen
                .iter()
                .enumerate()
                .flat_map(|(pos, picks)| {
                    picks
                        .iter()
                        .enumerate()
                        .filter(move |(_, (expert, _))| *expert == e)
                        .map(move |(slot, (_, w))| (pos, slot, *w))
                })
                .collect();
            if routed.is_empty() {
                continue;
            }
            let ids: Vec<u32> = routed.iter().map(|(pos, _, _)| *pos as u32).collect();
            let ids = Tensor::new(ids.as_slice(), &Device::Cpu)?;
            let input = rows.index_select(&ids, 0)?.unsqueeze(0)?;
            let out = gated(
                activation,
                &self.gate[e],
                &self.up[e],
                &self.down[e],
                &input,
            )?;
            let out: Vec<Vec<f32>> = out.squeeze(0)?.to_vec2()?;
            for ((pos, slot, w), y) in routed.iter().zip(out) {
                let at = &mut slots[*slot][pos * hidden..(pos + 1) * hidden];
                for (a, v) in at.iter_mut().zip(y) {
                    *a = v * w;
                }
            }
        }
        let mut sum = slots.remove(0);
        for slot in &slots {
            for (a, b) in sum.iter_mut().zip(slot) {
                *a += b;
            }
        }
        Ok(Tensor::from_vec(sum, (1, positions, hidden), &Device::Cpu)?)
    }
}

impl GgufAllPositions {
    /// Load `path` with its matrices at `format`'s weights (the native Q4_1 loads as is), its
    /// keys and values rounded as its KV cache holds them where it names one. Requantising is
    /// most of a load (about a second a format on one core): `kept`, where given, is a file the
    /// requantised matrices are read from when it holds them all at `format`, and written to
    /// when not (whole, under another name, then renamed: a file of that name is complete).
    pub fn load(
        path: &Path,
        format: NumericFormat,
        kept: Option<&Path>,
    ) -> Result<GgufAllPositions> {
        Self::load_as(path, format, kept, Mix::LlamaQuantize)
    }

    /// `path` with every matrix (the token embeddings included) requantised by candle to
    /// `format` itself: candle's own engine (`super::QuantizedLm`, `hspi serve`), as it has
    /// served and collected since its first datasets.
    pub fn load_uniform(path: &Path, format: NumericFormat) -> Result<GgufAllPositions> {
        Self::load_as(path, format, None, Mix::Uniform)
    }

    fn load_as(
        path: &Path,
        format: NumericFormat,
        kept: Option<&Path>,
        mix: Mix,
    ) -> Result<GgufAllPositions> {
        let uniform = mix == Mix::Uniform;
        let bad = |reason: String| CollectError::BadWeights {
            model: "a GGUF language model".into(),
            path: path.into(),
            reason,
        };
        let kv_cache = format.kv_cache();
        let format = format.weights();
        let target = ggml_type(format).ok_or_else(|| {
            bad(format!(
                "candle cannot run this model at {format} (formats: f32 f16 q8_0 q6_k q4_0 q4_1 q5_0 q5_1)"
            ))
        })?;
        let dev = Device::Cpu;
        let mut file = std::fs::File::open(path).map_err(CollectError::io(path))?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| bad(e.to_string()))?;
        let config = ModelConfig::from_gguf(&content, path)?;
        let kv_cache = kv_cache
            .map(|c| KvRounding::new(c, config.head_dim))
            .transpose()
            .map_err(|e| bad(e.to_string()))?;
        let eps = f64::from(config.rms_eps);
        let (heads, kv_heads, hidden, blocks) =
            (config.heads, config.kv_heads, config.hidden, config.layers);
        let architecture = config.architecture.clone();
        let mut tensor = |name: &str| -> Result<QTensor> {
            content
                .tensor(&mut file, name, &dev)
                .map_err(|e| bad(format!("{name}: {e}")))
        };
        // The matrices at `format`, by name (the output head as `output.weight`, tied to the
        // embeddings where the file has none), each at the type llama-quantize gives it. A
        // quantised file type requantises the embeddings too (the table the tokens are looked up
        // in: the output head's where tied).
        let tied = !content.tensor_infos.contains_key("output.weight");
        let output_name = if tied {
            "token_embd.weight"
        } else {
            "output.weight"
        };
        let requantised = |name: &str, from: &str, role: Role| -> Result<Requantised> {
            let info = content
                .tensor_infos
                .get(from)
                .ok_or_else(|| bad(format!("no {from} in the GGUF")))?;
            let columns = info.shape.dims().last().copied().unwrap_or(0);
            Ok(Requantised {
                name: name.into(),
                from: from.into(),
                dtype: match mix {
                    Mix::LlamaQuantize => tensor_type(format, role, columns).unwrap_or(target),
                    Mix::Uniform => target,
                },
            })
        };
        let mlp = match architecture.experts {
            Some(_) => EXPERT_MLP,
            None => DENSE_MLP,
        };
        let mut wanted: Vec<Requantised> = Vec::new();
        for layer in 0..blocks {
            for matrix in ATTENTION.into_iter().chain(mlp) {
                let name = format!("blk.{layer}.{matrix}.weight");
                // llama-quantize's choices go by the name's stem (`ffn_down` for the experts').
                let role = Role::Block {
                    matrix: matrix.trim_end_matches("_exps"),
                    layer,
                    layers: blocks,
                };
                wanted.push(requantised(&name, &name, role)?);
            }
        }
        wanted.push(requantised("output.weight", output_name, Role::Output)?);
        // A file of this very type loads as it is (SmolLM2's packaged Q4_1).
        let native = llama_file_type::file_format(&content) == Some(format);
        let requantise_embeddings = match mix {
            Mix::LlamaQuantize => !is_float(target) && !native && !tied,
            Mix::Uniform => !native,
        };
        if requantise_embeddings {
            wanted.push(requantised(
                "token_embd.weight",
                "token_embd.weight",
                Role::Embeddings,
            )?);
        }
        let matrices: HashMap<String, QTensor> = if native {
            let mut m = HashMap::new();
            for r in &wanted {
                m.insert(r.name.clone(), tensor(&r.from)?);
            }
            m
        } else if let Some(m) = kept.and_then(|k| read_kept(k, &content, &wanted)) {
            m
        } else {
            let mut m = HashMap::new();
            for r in &wanted {
                let source = tensor(&r.from)?.dequantize(&dev)?;
                // A stack of experts is quantised row by row, as ggml stores it.
                let q = match mix {
                    Mix::LlamaQuantize => {
                        llama_file_type::quantize(&kept_weight::as_matrix(&source)?, r.dtype)?
                    }
                    Mix::Uniform => QTensor::quantize(&kept_weight::as_matrix(&source)?, r.dtype)?,
                };
                let q = match source.rank() {
                    2 => q,
                    _ => kept_weight::reshaped(&q, source.dims())?,
                };
                m.insert(r.name.clone(), q);
            }
            // A cache that cannot be written costs the next load its time, nothing else.
            if let Some(k) = kept {
                let _ = write_kept(k, &m);
            }
            m
        };
        // The table tokens are looked up in, as the file type holds it (the output head itself
        // where tied and requantised).
        let mut matrices: HashMap<String, Arc<QTensor>> = matrices
            .into_iter()
            .map(|(name, t)| (name, Arc::new(t)))
            .collect();
        let file_embeddings = content
            .tensor_infos
            .get("token_embd.weight")
            .map(|i| i.ggml_dtype);
        // A tied head at the file's own float type holds the very same values: one copy.
        let head_is_the_table =
            tied && is_float(target) && file_embeddings == Some(matrices["output.weight"].dtype());
        let embed = KeptTable::new(if uniform && !native {
            matrices
                .remove("token_embd.weight")
                .ok_or_else(|| bad("no token_embd.weight in the GGUF".into()))?
        } else if head_is_the_table {
            matrices["output.weight"].clone()
        } else if is_float(target) || native {
            Arc::new(tensor("token_embd.weight")?)
        } else if tied {
            matrices["output.weight"].clone()
        } else {
            matrices
                .remove("token_embd.weight")
                .ok_or_else(|| bad("no token_embd.weight in the GGUF".into()))?
        })?;
        let mut take = |name: &str| -> Result<Arc<QTensor>> {
            matrices
                .remove(name)
                .ok_or_else(|| bad(format!("no {name} in the GGUF")))
        };
        let norm = RmsNorm::from_qtensor(tensor("output_norm.weight")?, eps)?;
        let rope_freqs = match content.tensor_infos.contains_key("rope_freqs.weight") {
            true => Some(tensor("rope_freqs.weight")?.dequantize(&dev)?.to_vec1()?),
            false => None,
        };
        let mut layers = Vec::with_capacity(blocks);
        for i in 0..blocks {
            let mut norm = |name: &str| -> Result<RmsNorm> {
                RmsNorm::from_qtensor(tensor(&format!("blk.{i}.{name}.weight"))?, eps)
            };
            let attn_norm = norm("attn_norm")?;
            let ffn_norm = norm("ffn_norm")?;
            let qk_norm = match architecture.qk_norm {
                true => Some([norm("attn_q_norm")?, norm("attn_k_norm")?]),
                false => None,
            };
            let post_norms = match architecture.sandwich_norms {
                true => Some([norm("post_attention_norm")?, norm("post_ffw_norm")?]),
                false => None,
            };
            let qkv_bias = match architecture.qkv_bias {
                true => {
                    let mut bias = |name: &str| -> Result<Tensor> {
                        Ok(tensor(&format!("blk.{i}.{name}.bias"))?.dequantize(&dev)?)
                    };
                    Some([bias("attn_q")?, bias("attn_k")?, bias("attn_v")?])
                }
                false => None,
            };
            let windowed = architecture.sliding.filter(|s| s.windowed(i));
            let mlp = match architecture.experts {
                Some(experts) => {
                    let mut each = |name: &str| -> Result<Vec<KeptMatrix>> {
                        kept_weight::experts(&*take(&format!("blk.{i}.{name}.weight"))?)
                    };
                    let (gate, up, down) = (
                        each("ffn_gate_exps")?,
                        each("ffn_up_exps")?,
                        each("ffn_down_exps")?,
                    );
                    let router =
                        tensor(&format!("blk.{i}.ffn_gate_inp.weight"))?.dequantize(&dev)?;
                    let (routed, width) = router.dims2()?;
                    if gate.len() != experts.count || routed != experts.count {
                        return Err(bad(format!(
                            "layer {i}: {} experts and a router over {routed}, the file says {}",
                            gate.len(),
                            experts.count
                        )));
                    }
                    let router = Panels::new(
                        Weights::F32(&router.flatten_all()?.to_vec1::<f32>()?),
                        routed,
                        width,
                    );
                    Mlp::Experts(MixtureOfExperts {
                        router,
                        gate,
                        up,
                        down,
                        used: experts.used,
                    })
                }
                None => {
                    let mut m =
                        |name: &str| KeptMatrix::new(take(&format!("blk.{i}.{name}.weight"))?);
                    Mlp::Dense {
                        gate: m("ffn_gate")?,
                        up: m("ffn_up")?,
                        down: m("ffn_down")?,
                    }
                }
            };
            let mut m = |name: &str| KeptMatrix::new(take(&format!("blk.{i}.{name}.weight"))?);
            layers.push(Layer {
                q: m("attn_q")?,
                k: m("attn_k")?,
                v: m("attn_v")?,
                o: m("attn_output")?,
                mlp,
                attn_norm,
                ffn_norm,
                qkv_bias,
                qk_norm,
                post_norms,
                window: windowed.map(|s| s.window),
                // The windowed layers turn unscaled (llama.cpp's `rope_freq_scale_train_swa`).
                rope: match windowed {
                    Some(s) => Rotation {
                        base: s.rope_theta,
                        freq_scale: 1.0,
                    },
                    None => Rotation {
                        base: config.rope_theta,
                        freq_scale: config.rope_linear.map_or(1.0, |f| 1.0 / f),
                    },
                },
            });
        }
        Ok(GgufAllPositions {
            embed,
            layers,
            norm,
            output: KeptMatrix::new(take("output.weight")?)?,
            heads,
            kv_heads,
            head_dim: config.head_dim,
            embedding_scale: architecture
                .scaled_embeddings
                .then(|| f64::from((hidden as f32).sqrt())),
            architecture,
            rope_freqs,
            kv_cache,
            prefix: None,
            last: Vec::new(),
        })
    }

    /// The rotary tables for positions `start..n` turning as `rotation`.
    fn rotary(&self, start: usize, n: usize, rotation: Rotation) -> Result<(Tensor, Tensor)> {
        let base = rotation.base;
        let d = self.head_dim;
        let theta: Vec<f32> = (0..d)
            .step_by(2)
            .enumerate()
            .map(|(j, i)| {
                let divisor = self.rope_freqs.as_ref().and_then(|f| f.get(j)).copied();
                1.0 / base.powf(i as f32 / d as f32) / divisor.unwrap_or(1.0)
            })
            .collect();
        let theta = Tensor::new(theta.as_slice(), &Device::Cpu)?;
        let at = Tensor::arange(start as u32, n as u32, &Device::Cpu)?
            .to_dtype(DType::F32)?
            .reshape((n - start, 1))?
            .matmul(&theta.reshape((1, d / 2))?)?;
        let at = match rotation.freq_scale {
            1.0 => at,
            scale => (at * f64::from(scale))?,
        };
        Ok((at.cos()?, at.sin()?))
    }

    /// One causal pass over `tokens[start..]`, attending to `cache` (every layer's keys and
    /// values of `tokens[..start]`): the final-norm hidden states of positions `start..`, and
    /// every layer's keys and values of the whole context.
    fn pass(
        &self,
        tokens: &[u32],
        start: usize,
        cache: &[KeyValues],
    ) -> Result<(Tensor, Vec<KeyValues>)> {
        let n = tokens.len();
        let m = n - start;
        let dev = Device::Cpu;
        let mut x = self.embed.rows(&tokens[start..])?.unsqueeze(0)?;
        if let Some(scale) = self.embedding_scale {
            x = (x * scale)?;
        }
        // Which position `i` attends to `j`: the earlier ones, within the window where there is
        // one (llama.cpp masks `i - j >= window`).
        let mask = |window: Option<usize>| -> Result<Tensor> {
            let mask: Vec<f32> = (start..n)
                .flat_map(|i| {
                    (0..n).map(move |j| match j > i || window.is_some_and(|w| i - j >= w) {
                        true => f32::NEG_INFINITY,
                        false => 0.0,
                    })
                })
                .collect();
            Ok(Tensor::from_vec(mask, (m, n), &dev)?)
        };
        let mut masks: HashMap<Option<usize>, Tensor> = HashMap::new();
        let mut rotations: HashMap<(u32, u32), (Tensor, Tensor)> = HashMap::new();
        for l in &self.layers {
            if let std::collections::hash_map::Entry::Vacant(e) = masks.entry(l.window) {
                e.insert(mask(l.window)?);
            }
            if let std::collections::hash_map::Entry::Vacant(e) = rotations.entry(l.rope.key()) {
                e.insert(self.rotary(start, n, l.rope)?);
            }
        }
        let (h, kvh, d) = (self.heads, self.kv_heads, self.head_dim);
        let heads = |t: Tensor, count: usize| -> Result<Tensor> {
            Ok(t.reshape((1, m, count, d))?.transpose(1, 2)?.contiguous()?)
        };
        let mut kept = Vec::with_capacity(self.layers.len());
        for (i, l) in self.layers.iter().enumerate() {
            let (cos, sin) = &rotations[&l.rope.key()];
            let rope = |t: &Tensor| -> Result<Tensor> {
                Ok(match self.architecture.gguf_rope {
                    RopeStyle::Neox => candle_nn::rotary_emb::rope(t, cos, sin)?,
                    RopeStyle::Interleaved => candle_nn::rotary_emb::rope_i(t, cos, sin)?,
                })
            };
            let a = l.attn_norm.forward(&x)?;
            let (mut q, mut k, mut v) = (l.q.forward(&a)?, l.k.forward(&a)?, l.v.forward(&a)?);
            if let Some([bq, bk, bv]) = &l.qkv_bias {
                q = q.broadcast_add(bq)?;
                k = k.broadcast_add(bk)?;
                v = v.broadcast_add(bv)?;
            }
            let (mut q, mut k, mut v) = (heads(q, h)?, heads(k, kvh)?, heads(v, kvh)?);
            if let Some([q_norm, k_norm]) = &l.qk_norm {
                q = q_norm.forward(&q)?;
                k = k_norm.forward(&k)?;
            }
            let mut q = rope(&q)?;
            k = rope(&k)?;
            // A quantised cache holds every key and value rounded, the current pass's too
            // (llama.cpp writes them to the cache before attending).
            if let Some(r) = &self.kv_cache {
                q = r.queries(&q)?;
                k = r.keys(&k)?;
                v = r.values(&v)?;
            }
            if let Some((ck, cv)) = cache.get(i) {
                k = Tensor::cat(&[ck, &k], 2)?;
                v = Tensor::cat(&[cv, &v], 2)?;
            }
            kept.push((k.clone(), v.clone()));
            // Each key-value head shared by its group of query heads; both products hspi's own
            // (one summation order on every CPU).
            let att = (float_product::batched(&q.contiguous()?, &k.contiguous()?)?
                / (d as f64).sqrt())?
            .broadcast_add(&masks[&l.window])?;
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            let mut y = float_product::batched(&att, &v.transpose(2, 3)?.contiguous()?)?;
            if let Some(r) = &self.kv_cache {
                y = r.output(&y)?;
            }
            let y = y.transpose(1, 2)?.reshape((1, m, h * d))?;
            let mut y = l.o.forward(&y)?;
            if let Some([after_attention, _]) = &l.post_norms {
                y = after_attention.forward(&y)?;
            }
            x = (x + y)?;
            let f = l.ffn_norm.forward(&x)?;
            let activation = self.architecture.activation;
            let mut mlp = match &l.mlp {
                Mlp::Dense { gate, up, down } => gated(activation, gate, up, down, &f)?,
                Mlp::Experts(experts) => experts.forward(activation, &f)?,
            };
            if let Some([_, after_mlp]) = &l.post_norms {
                mlp = after_mlp.forward(&mlp)?;
            }
            x = (x + mlp)?;
        }
        Ok((self.norm.forward(&x)?, kept))
    }

    /// Logits over the whole vocabulary after each prefix `tokens[..k]`, `k` from `from` to the
    /// whole, from one causal pass over `tokens`. A prefix the context shares with the previous
    /// one (generation: every token but the last) is computed apart and its keys and values kept.
    pub fn logits_from(&mut self, tokens: &[u32], from: usize) -> Result<Vec<Vec<f32>>> {
        let upto = from.min(tokens.len());
        let shared = tokens[..upto]
            .iter()
            .zip(&self.last)
            .take_while(|(a, b)| a == b)
            .count();
        self.last = tokens[..upto].to_vec();
        self.logits_split(tokens, from, shared)
    }

    /// As [`Self::logits_from`], the whole context in one pass, as serving engines read a
    /// prompt: the logits are the context's alone, whatever was computed before. (A prefix
    /// computed apart moves them: at Q8_0 a logit by up to 1.6 on SmolLM2's chat prompts, as
    /// one activation's rounding to 8 bits flips.)
    pub fn logits_whole(&mut self, tokens: &[u32], from: usize) -> Result<Vec<Vec<f32>>> {
        self.logits_split(tokens, from, 0)
    }

    /// The context computed in two passes split at `prefix` (the keys and values of
    /// `tokens[..prefix]` kept for the next context that starts with them), or in one where
    /// `prefix` is shorter than 8 tokens.
    fn logits_split(
        &mut self,
        tokens: &[u32],
        from: usize,
        prefix: usize,
    ) -> Result<Vec<Vec<f32>>> {
        let n = tokens.len();
        if n == 0 {
            return Err(CollectError::BadRequest(
                "an empty context has no next token".into(),
            ));
        }
        let from = from.clamp(1, n);
        let prefix = prefix.min(from - 1);
        let split = prefix >= MIN_PREFIX;
        let kept = self
            .prefix
            .as_ref()
            .is_some_and(|(p, _)| p[..] == tokens[..prefix]);
        if split && !kept {
            let (_, cache) = self.pass(&tokens[..prefix], 0, &[])?;
            self.prefix = Some((tokens[..prefix].to_vec(), cache));
        }
        let (start, cache) = match &self.prefix {
            Some((p, cache)) if split && p[..] == tokens[..prefix] => (p.len(), cache.as_slice()),
            _ => (0, &[][..]),
        };
        let (x, _) = self.pass(tokens, start, cache)?;
        let x = x.narrow(1, from - 1 - start, n + 1 - from)?;
        let logits = self.output.forward(&x)?.squeeze(0)?;
        Ok(logits.to_dtype(DType::F32)?.to_vec2()?)
    }
}
