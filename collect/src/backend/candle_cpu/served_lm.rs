//! A decoder of any dense family (`crate::zoo::architecture`: llama with Llama 3's rotary
//! scaling, mistral, qwen2, qwen3, gemma3) as vLLM's CPU path computes it at one of the market's
//! formats (`crate::scheme`), read from vLLM 0.32's sources: the model's dtype bf16 (weights and
//! the stored residual in bf16); the residual added in f32 and normalised unrounded (its native
//! `fused_add_rms_norm`: the sum is stored in bf16 for the next layer, the norm reads the f32
//! sum), the normalised row rounded to bf16 before the bf16 multiply by its weight (gemma's
//! `GemmaRMSNorm` multiplies by `1 + w` in f32 and rounds once); the rotary embedding by its CPU
//! kernel (f32 arithmetic on the bf16 cos/sin cache, one rounding; Llama 3's scaled frequencies
//! as `Llama3RotaryEmbedding`; gemma3's windowed layers on their own base); the gate's activation
//! (SiLU, or GELU-tanh) and the multiply as two bf16 PyTorch operations; attention with an f32
//! softmax and f32 accumulation, over the layer's window where it has one; every linear layer by
//! its scheme (weights quantised once, activations at run time, the GEMM in f32 on candle's
//! kernels, the bf16 bias added to the f32 sum, the output rounded to bf16); qwen3's and gemma3's
//! per-head q/k norms before the rotation; gemma3's norms after attention and the MLP and its
//! embeddings times √hidden in bf16; the embeddings and `lm_head` unquantised. Logits are the
//! last position's bf16 values read as f32 (vLLM's log_softmax then runs in f32 on them).
//! A scheme run inside transformers' own modules (`ServedForward::Transformers`: PyTorch's INT8
//! W8A8) gets transformers' eager forward around its linear layers instead: the residual rounded
//! to bf16 before each norm reads it, the rotation as three bf16 operations, and PyTorch's CPU
//! flash attention (`torch_eager.rs`); one of vLLM's `_C_AVX2` library
//! (`ServedForward::VllmTruncating`: its INT8 W8A8) cuts the rotation's and attention's outputs to
//! bf16 toward zero instead of rounding them.

use std::sync::Arc;

use hspi_datasets::{CachedWeights, KvCache, NumericFormat};

use super::compact_matrix::{read_array, read_u64, write_array, CompactMatrix};
use super::int8_product::Int8Matrix;
use super::torch_eager;
use crate::error::{CollectError, Result};
use crate::rounding::{truncate_bf16, truncate_fp8_e4m3, truncate_fp8_e5m2};
use crate::scheme::{self, round_bf16, LinearScheme, ServedForward};
use crate::zoo::architecture::Activation;
use crate::zoo::decoder_weights::{
    inverse_frequencies, rotary_position, DecoderWeights, ModelConfig,
};

/// A linear layer: the scheme's weights (`[out, in]`), held compact between passes.
struct Linear {
    weight: CompactMatrix,
    cols: usize,
    rows: usize,
    /// The codes and scales where the scheme multiplies integers.
    int8: Option<Int8Matrix>,
}

impl Linear {
    fn new(
        weight: CompactMatrix,
        rows: usize,
        cols: usize,
        scheme: &dyn LinearScheme,
    ) -> Result<Linear> {
        let int8 = match scheme.multiplies_integers() {
            false => None,
            true => Some(
                Int8Matrix::from_values(&weight.values(), rows, cols).ok_or_else(|| {
                    CollectError::Unsupported {
                        platform: scheme.format().to_string(),
                        model: String::new(),
                        reason: "a layer's weights are not int8 codes times a scale per row".into(),
                    }
                })?,
            ),
        };
        Ok(Linear {
            weight,
            cols,
            rows,
            int8,
        })
    }
}

struct Layer {
    attn_norm: Vec<f32>,
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    ffn_norm: Vec<f32>,
    gate: Linear,
    up: Linear,
    down: Linear,
    /// The query, key and value biases in bf16 (qwen2).
    qkv_bias: Option<[Vec<f32>; 3]>,
    /// Each head's query and key norm (qwen3, gemma3).
    qk_norm: Option<[Vec<f32>; 2]>,
    /// The norms after attention and after the MLP (gemma3).
    post_norms: Option<[Vec<f32>; 2]>,
}

impl Layer {
    /// The vectors beside the matrices, in the order a kept file holds them.
    fn vectors(&self) -> Vec<&Vec<f32>> {
        let mut out = vec![&self.attn_norm, &self.ffn_norm];
        out.extend(self.qkv_bias.iter().flatten());
        out.extend(self.qk_norm.iter().flatten());
        out.extend(self.post_norms.iter().flatten());
        out
    }
}

/// The vectors a layer of `c` holds beside its matrices, with their lengths, in a kept file's
/// order (as [`Layer::vectors`]).
fn vector_lengths(c: &ModelConfig) -> Vec<usize> {
    let (a, d) = (&c.architecture, c.head_dim());
    let mut out = vec![c.hidden, c.hidden];
    if a.qkv_bias {
        out.extend([c.heads * d, c.kv_heads * d, c.kv_heads * d]);
    }
    if a.qk_norm {
        out.extend([d, d]);
    }
    if a.sandwich_norms {
        out.extend([c.hidden, c.hidden]);
    }
    out
}

pub struct ServedLm {
    config: ModelConfig,
    scheme: Box<dyn LinearScheme>,
    /// vLLM's fp8 KV cache, where the format has one: keys and values stored rounded.
    kv_cache: Option<KvCache>,
    tables: Arc<Tables>,
    layers: Vec<Layer>,
    final_norm: Vec<f32>,
    /// Llama 3's scaled rotary frequencies, where the model scales them.
    rope_inv_freq: Option<Vec<f32>>,
    /// The keys and values of the last context [`Self::next_token_logits`] read: a request
    /// extending it (the next token of an answer) computes its new positions only.
    last: std::sync::Mutex<Past>,
}

/// Each layer's keys and values (rotated, as cached) for the positions of `tokens`. Every row
/// of a pass is computed on its own (norms, products, activations' scales and attention per
/// position), so the rows a later pass adds to these are the bits a pass over the whole
/// context gives them.
#[derive(Default)]
struct Past {
    tokens: Vec<u32>,
    layers: Vec<(Vec<f32>, Vec<f32>)>,
}

/// The embeddings and the output projection, unquantised in every format: one copy serves
/// every format of the model.
pub struct Tables {
    /// `[vocab, hidden]`, bf16 values.
    embed: CompactMatrix,
    /// `[vocab, hidden]`, bf16 values: the output projection where not tied to the embeddings.
    lm_head: Option<CompactMatrix>,
}

impl Tables {
    pub fn new(weights: &DecoderWeights) -> Arc<Tables> {
        let hidden = weights.config.hidden;
        Arc::new(Tables {
            embed: CompactMatrix::new(bf16s(&weights.embed), hidden),
            lm_head: weights
                .lm_head
                .as_deref()
                .map(|h| CompactMatrix::new(bf16s(h), hidden)),
        })
    }

    /// The output projection, `[vocab, hidden]`.
    fn head(&self) -> &CompactMatrix {
        self.lm_head.as_ref().unwrap_or(&self.embed)
    }
}

/// The first bytes of a kept served-path file, and its last (a file cut short lacks them).
const KEPT_MAGIC: &[u8] = b"hspi served-lm 2\n";
const KEPT_END: &[u8] = b"end\n";

fn bf16s(v: &[f32]) -> Vec<f32> {
    v.iter().map(|x| round_bf16(*x)).collect()
}

impl ServedLm {
    pub fn new(weights: &DecoderWeights, format: NumericFormat) -> Result<ServedLm> {
        Self::with_tables(weights, format, Tables::new(weights))
    }

    /// `weights` at `format`, its embeddings and output projection `tables` (shared by the
    /// model's formats).
    pub fn with_tables(
        weights: &DecoderWeights,
        format: NumericFormat,
        tables: Arc<Tables>,
    ) -> Result<ServedLm> {
        let c = &weights.config;
        let scheme = scheme::serving(format).ok_or_else(|| CollectError::Unsupported {
            platform: format.to_string(),
            model: c.arch.clone(),
            reason: format!(
                "no serving scheme computes {format} (schemes: {})",
                scheme::market_formats()
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        })?;
        if let Some(stored) = weights.quantized.filter(|q| *q != format.weights()) {
            return Err(CollectError::Unsupported {
                platform: format.to_string(),
                model: c.arch.clone(),
                reason: format!(
                    "the checkpoint's layers are stored in {stored}: it is served at {stored} only"
                ),
            });
        }
        let widths = [c.hidden, c.intermediate, c.heads * c.head_dim()];
        if let Some(cols) = widths.into_iter().find(|cols| !scheme.fits(*cols)) {
            return Err(CollectError::Unsupported {
                platform: format.to_string(),
                model: c.arch.clone(),
                reason: format!(
                    "{format} cannot store a layer {cols} wide (its group does not divide it); \
                     groups that divide every width of this model: {}",
                    fitting_groups(&widths)
                ),
            });
        }
        // A published checkpoint's layers are already the format's values; others are quantised
        // here from their bf16 values.
        let stored = weights.quantized.is_some();
        let linear = |w: &[f32], rows: usize, cols: usize| -> Result<Linear> {
            Linear::new(
                CompactMatrix::new(w.to_vec(), cols),
                rows,
                cols,
                scheme.as_ref(),
            )
        };
        let mut layers = Vec::with_capacity(c.layers);
        for l in &weights.layers {
            let mut quantised;
            let l = if stored {
                l
            } else {
                quantised = l.clone();
                scheme::quantise_layer(&mut quantised, scheme.as_ref(), c);
                &quantised
            };
            let [q, k, v, o, gate, up, down] = l.linears(c);
            let norm = |w: &Vec<f32>| norm_factor(c, w);
            layers.push(Layer {
                attn_norm: norm(&l.attn_norm),
                q: linear(q.1, q.2, q.3)?,
                k: linear(k.1, k.2, k.3)?,
                v: linear(v.1, v.2, v.3)?,
                o: linear(o.1, o.2, o.3)?,
                ffn_norm: norm(&l.ffn_norm),
                gate: linear(gate.1, gate.2, gate.3)?,
                up: linear(up.1, up.2, up.3)?,
                down: linear(down.1, down.2, down.3)?,
                qkv_bias: l.qkv_bias.as_ref().map(|b| b.each_ref().map(|b| bf16s(b))),
                qk_norm: l.qk_norm.as_ref().map(|n| n.each_ref().map(norm)),
                post_norms: l.post_norms.as_ref().map(|n| n.each_ref().map(norm)),
            });
        }
        Ok(ServedLm {
            config: c.clone(),
            scheme,
            kv_cache: format.kv_cache(),
            tables,
            layers,
            final_norm: norm_factor(c, &weights.final_norm),
            rope_inv_freq: weights.rope_inv_freq.clone(),
            last: Default::default(),
        })
    }

    /// The format computed: the scheme's, with its KV cache where it has one.
    pub fn format(&self) -> NumericFormat {
        let weights = self.scheme.format();
        match (self.kv_cache, CachedWeights::of(weights)) {
            (Some(cache), Some(weights)) => NumericFormat::KvCached { weights, cache },
            _ => weights,
        }
    }

    /// Keys (after the rotary embedding) and values as the cache stores them: vLLM's CPU fp8
    /// cache with its default scale of 1 (`k_scale`, `v_scale`), each bf16 value's mantissa cut
    /// toward zero and saturated (its `cpu_attn_fp8.hpp` conversion, not a rounding to
    /// nearest); read back exactly (fp8 widens without rounding).
    fn cached(&self, x: &mut [f32]) {
        let round: fn(f32) -> f32 = match self.kv_cache {
            Some(KvCache::Fp8E4m3) => truncate_fp8_e4m3,
            Some(KvCache::Fp8E5m2) => truncate_fp8_e5m2,
            _ => return,
        };
        x.iter_mut().for_each(|v| *v = round(*v));
    }

    /// Keep the quantised layers in `path` (whole or not at all), so that a later load reads
    /// them instead of quantising again (seconds a format).
    pub fn write_kept(&self, path: &std::path::Path) -> std::io::Result<()> {
        use std::io::Write;
        super::kept_weight::write_whole(path, |w| {
            w.write_all(KEPT_MAGIC)?;
            // The weights' format: a cache is rounded at run time, its weights' file shared.
            let format = self.scheme.format().to_string();
            write_array(w, format.as_bytes(), |b| [*b])?;
            w.write_all(&(self.layers.len() as u64).to_le_bytes())?;
            let norm = |w: &mut std::io::BufWriter<std::fs::File>, n: &[f32]| {
                write_array(w, n, |v| v.to_le_bytes())
            };
            for l in &self.layers {
                for v in l.vectors() {
                    norm(w, v)?;
                }
                for linear in [&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down] {
                    w.write_all(&(linear.rows as u64).to_le_bytes())?;
                    w.write_all(&(linear.cols as u64).to_le_bytes())?;
                    linear.weight.write(w)?;
                }
            }
            norm(w, &self.final_norm)?;
            norm(w, self.rope_inv_freq.as_deref().unwrap_or_default())?;
            w.write_all(KEPT_END)
        })
    }

    /// The model of `config` at `format` from the layers kept in `path`, with `tables`; None
    /// where the file is absent, cut short, or holds another format or shape (it is then made
    /// again).
    pub fn read_kept(
        path: &std::path::Path,
        config: &ModelConfig,
        format: NumericFormat,
        tables: Arc<Tables>,
    ) -> Option<ServedLm> {
        use std::io::Read;
        let scheme = scheme::serving(format)?;
        let mut r = std::io::BufReader::new(std::fs::File::open(path).ok()?);
        let mut magic = vec![0u8; KEPT_MAGIC.len()];
        r.read_exact(&mut magic).ok()?;
        let written = read_array(&mut r, |b: [u8; 1]| b[0]).ok()?;
        if magic != KEPT_MAGIC || written != format.weights().to_string().as_bytes() {
            return None;
        }
        if read_u64(&mut r).ok()? as usize != config.layers {
            return None;
        }
        let vector = |r: &mut std::io::BufReader<std::fs::File>, len: usize| {
            let n = read_array(r, f32::from_le_bytes).ok()?;
            (n.len() == len).then_some(n)
        };
        let lengths = vector_lengths(config);
        let linear = |r: &mut std::io::BufReader<std::fs::File>| -> Option<Linear> {
            let (rows, cols) = (read_u64(r).ok()? as usize, read_u64(r).ok()? as usize);
            let weight = CompactMatrix::read(r).ok()?;
            (weight.len() == rows * cols)
                .then(|| Linear::new(weight, rows, cols, scheme.as_ref()).ok())
                .flatten()
        };
        let mut layers = Vec::with_capacity(config.layers);
        let a = &config.architecture;
        for _ in 0..config.layers {
            let mut vectors = Vec::with_capacity(lengths.len());
            for len in &lengths {
                vectors.push(vector(&mut r, *len)?);
            }
            let mut vectors = vectors.into_iter();
            let mut next = || vectors.next().expect("one per length");
            let (attn_norm, ffn_norm) = (next(), next());
            let qkv_bias = a.qkv_bias.then(|| [next(), next(), next()]);
            let qk_norm = a.qk_norm.then(|| [next(), next()]);
            let post_norms = a.sandwich_norms.then(|| [next(), next()]);
            layers.push(Layer {
                attn_norm,
                ffn_norm,
                qkv_bias,
                qk_norm,
                post_norms,
                q: linear(&mut r)?,
                k: linear(&mut r)?,
                v: linear(&mut r)?,
                o: linear(&mut r)?,
                gate: linear(&mut r)?,
                up: linear(&mut r)?,
                down: linear(&mut r)?,
            });
        }
        let final_norm = vector(&mut r, config.hidden)?;
        let inv_freq = read_array(&mut r, f32::from_le_bytes).ok()?;
        let rope_inv_freq = match inv_freq.len() {
            0 => None,
            n if n == config.head_dim() / 2 => Some(inv_freq),
            _ => return None,
        };
        let mut end = vec![0u8; KEPT_END.len()];
        r.read_exact(&mut end).ok()?;
        let shapes_fit = layers.iter().all(|l| {
            let fits = |m: &Linear, rows: usize, cols: usize| m.rows == rows && m.cols == cols;
            let (h, i, q, kv) = (
                config.hidden,
                config.intermediate,
                config.heads * config.head_dim(),
                config.kv_heads * config.head_dim(),
            );
            fits(&l.q, q, h)
                && fits(&l.k, kv, h)
                && fits(&l.v, kv, h)
                && fits(&l.o, h, q)
                && fits(&l.gate, i, h)
                && fits(&l.up, i, h)
                && fits(&l.down, h, i)
        });
        (end == KEPT_END && shapes_fit).then(|| ServedLm {
            config: config.clone(),
            scheme,
            kv_cache: format.kv_cache(),
            tables,
            layers,
            final_norm,
            rope_inv_freq,
            last: Default::default(),
        })
    }

    /// `x` (`[tokens, in]`) through a linear layer: the scheme's activations, an f32 GEMM, the
    /// bias added to the f32 sum where there is one, the output in bf16; or, where the scheme
    /// multiplies integers, its integer product.
    fn linear(
        &self,
        x: &[f32],
        tokens: usize,
        layer: &Linear,
        bias: Option<&[f32]>,
    ) -> Result<Vec<f32>> {
        if let Some(int8) = &layer.int8 {
            return Ok(int8.linear(x, bias));
        }
        let mut a = x.to_vec();
        self.scheme.activations(&mut a, layer.cols);
        let mut y = layer.weight.product(&a, layer.rows, layer.cols);
        debug_assert_eq!(y.len(), tokens * layer.rows);
        if let Some(bias) = bias {
            for row in y.chunks_mut(layer.rows) {
                row.iter_mut().zip(bias).for_each(|(y, b)| *y += b);
            }
        }
        Ok(bf16s(&y))
    }

    /// vLLM's native RMSNorm on each row of `x` (f32 values), `weight.len()` wide: f32
    /// statistics, then llama's normalised row rounded to bf16 times the bf16 weight in bf16, or
    /// gemma's row times its f32 factor `1 + w`, rounded once.
    fn rms_norm(&self, x: &[f32], weight: &[f32]) -> Vec<f32> {
        let d = weight.len();
        let gemma = self.config.architecture.unit_offset_norms;
        let mut out = Vec::with_capacity(x.len());
        for row in x.chunks(d) {
            let mean = row.iter().map(|v| v * v).sum::<f32>() / d as f32;
            let inv = 1.0 / (mean + self.config.rms_eps).sqrt();
            out.extend(row.iter().zip(weight).map(|(v, w)| match gemma {
                true => round_bf16(v * inv * w),
                false => round_bf16(round_bf16(v * inv) * w),
            }));
        }
        out
    }

    /// vLLM's `fused_add_rms_norm`: `hidden + residual` in f32, stored rounded as the new
    /// residual, and normalised as it is (unrounded); transformers' `residual + hidden` is a bf16
    /// tensor, and its norm reads the rounded sum.
    fn add_norm(&self, hidden: &[f32], residual: &mut [f32], weight: &[f32]) -> Vec<f32> {
        let sum: Vec<f32> = hidden
            .iter()
            .zip(residual.iter())
            .map(|(h, r)| h + r)
            .collect();
        residual
            .iter_mut()
            .zip(&sum)
            .for_each(|(r, s)| *r = round_bf16(*s));
        match self.scheme.forward() {
            ServedForward::Transformers => self.rms_norm(residual, weight),
            ServedForward::Vllm | ServedForward::VllmTruncating => self.rms_norm(&sum, weight),
        }
    }

    /// The rotary cache for `positions` at inverse frequencies `inv_freq`: per
    /// position and pair, cos and sin of the f32 angle kept in bf16 (vLLM's cos/sin cache);
    /// with linear scaling each position divided by its factor first (vLLM's
    /// `LinearScalingRotaryEmbedding`).
    fn rotary_table(
        inv_freq: &[f32],
        positions: std::ops::Range<usize>,
        linear: Option<f32>,
    ) -> Vec<(f32, f32)> {
        let mut table = Vec::with_capacity(positions.len() * inv_freq.len());
        for t in positions {
            let position = rotary_position(t, linear);
            for f in inv_freq {
                let angle = position * f;
                table.push((round_bf16(angle.cos()), round_bf16(angle.sin())));
            }
        }
        table
    }

    /// The inverse frequencies a layer turns with: the windowed layers' own base (gemma3), Llama
    /// 3's scaled ones, or the model's base.
    fn inverse_frequencies(&self, windowed: bool) -> Vec<f32> {
        let c = &self.config;
        match (windowed, c.architecture.sliding, &self.rope_inv_freq) {
            (true, Some(s), _) => inverse_frequencies(s.rope_theta, c.head_dim()),
            (_, _, Some(scaled)) => scaled.clone(),
            _ => inverse_frequencies(c.rope_theta, c.head_dim()),
        }
    }

    /// The rotary embedding (Hugging Face's pairs `i, i + d/2`) as vLLM's kernel computes it
    /// (the rotation in f32 on the bf16 cache, one rounding) or as transformers' bf16 tensor
    /// operations do (`torch_eager::rotate_pair`).
    fn rope(&self, x: &mut [f32], table: &[(f32, f32)], heads: usize) {
        let d = self.config.head_dim();
        let half = d / 2;
        let rotate = match self.scheme.forward() {
            ServedForward::Vllm => |a: f32, b: f32, cos: f32, sin: f32| {
                (round_bf16(a * cos - b * sin), round_bf16(b * cos + a * sin))
            },
            ServedForward::VllmTruncating => |a: f32, b: f32, cos: f32, sin: f32| {
                (
                    truncate_bf16(a * cos - b * sin),
                    truncate_bf16(b * cos + a * sin),
                )
            },
            ServedForward::Transformers => torch_eager::rotate_pair,
        };
        for (t, row) in table.chunks(half).enumerate() {
            for (i, &(cos, sin)) in row.iter().enumerate() {
                for h in 0..heads {
                    let at = (t * heads + h) * d;
                    (x[at + i], x[at + i + half]) = rotate(x[at + i], x[at + i + half], cos, sin);
                }
            }
        }
    }

    /// Causal attention per head (grouped key-value heads) of the queries of the positions from
    /// `start` on over the keys of every position, over the last `window` positions where the
    /// layer has one: scores from the bf16 queries and keys accumulated in f32 and
    /// scaled, softmax in f32, the weighted sum of the bf16 values accumulated in f32 and
    /// rounded once (vLLM's); or PyTorch's CPU flash attention (`torch_eager`).
    fn attention(
        &self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        start: usize,
        window: Option<usize>,
    ) -> Vec<f32> {
        let c = &self.config;
        let d = c.head_dim();
        let group = c.heads / c.kv_heads;
        // `head_dim ** -0.5` in Python's doubles, passed to the kernel as f32.
        let scale = (d as f64).powf(-0.5) as f32;
        let rows = q.len() / (c.heads * d);
        let tokens = start + rows;
        let mut out = vec![0f32; rows * c.heads * d];
        let mut weights = vec![0f32; tokens];
        // PyTorch's kernel keeps one block's scores at a time.
        let mut scores = Vec::new();
        let forward = self.scheme.forward();
        let to_bf16 = match forward {
            ServedForward::VllmTruncating => truncate_bf16,
            ServedForward::Vllm | ServedForward::Transformers => round_bf16,
        };
        for h in 0..c.heads {
            let kvh = h / group;
            for i in 0..rows {
                let t = start + i;
                let first = window.map_or(0, |w| (t + 1).saturating_sub(w));
                let qv = &q[(i * c.heads + h) * d..][..d];
                if forward == ServedForward::Transformers {
                    torch_eager::flash_attention_row(
                        qv,
                        k,
                        v,
                        c.kv_heads * d,
                        kvh * d,
                        first..=t,
                        scale,
                        &mut scores,
                        &mut out[(i * c.heads + h) * d..][..d],
                    );
                    continue;
                }
                let mut top = f32::NEG_INFINITY;
                for (s, w) in weights.iter_mut().enumerate().take(t + 1).skip(first) {
                    let kv = &k[(s * c.kv_heads + kvh) * d..][..d];
                    *w = qv.iter().zip(kv).map(|(a, b)| a * b).sum::<f32>() * scale;
                    top = top.max(*w);
                }
                let total: f32 = weights[first..=t]
                    .iter_mut()
                    .map(|w| {
                        *w = (*w - top).exp();
                        *w
                    })
                    .sum();
                let o = &mut out[(i * c.heads + h) * d..][..d];
                for (s, w) in weights.iter().enumerate().take(t + 1).skip(first) {
                    let p = w / total;
                    let vv = &v[(s * c.kv_heads + kvh) * d..][..d];
                    o.iter_mut().zip(vv).for_each(|(o, v)| *o += p * v);
                }
                o.iter_mut().for_each(|x| *x = to_bf16(*x));
            }
        }
        out
    }

    /// The gate's activation times the up projection, as two bf16 PyTorch operations.
    fn gated(&self, gate: &[f32], up: &[f32]) -> Vec<f32> {
        let act: fn(f32) -> f32 = match self.config.architecture.activation {
            Activation::Silu => |g| g / (1.0 + (-g).exp()),
            Activation::GeluTanh => gelu_tanh,
        };
        gate.iter()
            .zip(up)
            .map(|(g, u)| round_bf16(round_bf16(act(*g)) * u))
            .collect()
    }

    /// Logits over the whole vocabulary for the token after `tokens`: the bits of a fresh
    /// context, the positions of the last context read computed again only where `tokens`
    /// does not extend it.
    pub fn next_token_logits(&self, tokens: &[u32]) -> Result<Vec<f32>> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let extends = last.tokens.len() < tokens.len() && tokens.starts_with(&last.tokens);
        let mut past = match extends {
            true => std::mem::take(&mut *last),
            false => Past::default(),
        };
        let (h, residual) = self.positions(tokens, &mut past)?;
        *last = past;
        let rows = h.len() / self.config.hidden;
        Ok(self
            .head(&h, residual.as_deref(), rows - 1..rows)
            .pop()
            .unwrap_or_default())
    }

    /// Logits over the whole vocabulary after each prefix `tokens[..k]`, `k` from `from` to the
    /// whole, from one causal pass over `tokens` (teacher forcing on given tokens).
    pub fn logits_from(&self, tokens: &[u32], from: usize) -> Result<Vec<Vec<f32>>> {
        let (h, residual) = self.positions(tokens, &mut Past::default())?;
        let n = tokens.len();
        // The rows from `from` on through the head together (hspi's product sums each output
        // alike whatever the number of rows).
        let from = from.clamp(1, n);
        Ok(self.head(&h, residual.as_deref(), from - 1..n))
    }

    /// The final norm and the head on `rows` of the last block's output `h` (and the running
    /// sum beside it): bf16 logits read as f32.
    fn head(
        &self,
        h: &[f32],
        residual: Option<&[f32]>,
        rows: std::ops::Range<usize>,
    ) -> Vec<Vec<f32>> {
        let c = &self.config;
        let mut last = Vec::with_capacity(rows.len() * c.hidden);
        for k in rows {
            let at = k * c.hidden..(k + 1) * c.hidden;
            last.extend(match residual {
                Some(r) => {
                    let mut r = r[at.clone()].to_vec();
                    self.add_norm(&h[at], &mut r, &self.final_norm)
                }
                None => self.rms_norm(&h[at], &self.final_norm),
            });
        }
        let logits = self.tables.head().product(&last, c.vocab, c.hidden);
        logits.chunks(c.vocab).map(bf16s).collect()
    }

    /// The blocks over the positions of `tokens` after those `past` holds (whose keys and values
    /// it then holds too): the last block's output and the running sum for those positions.
    fn positions(&self, tokens: &[u32], past: &mut Past) -> Result<(Vec<f32>, Option<Vec<f32>>)> {
        let c = &self.config;
        let n = tokens.len();
        if n == 0 {
            return Err(CollectError::Unsupported {
                platform: self.format().to_string(),
                model: c.arch.clone(),
                reason: "an empty prompt has no next token".into(),
            });
        }
        let start = past.tokens.len();
        if past.layers.len() != self.layers.len() {
            past.layers = vec![Default::default(); self.layers.len()];
        }
        let rows = n - start;
        // Gemma's embeddings times √hidden, the factor a bf16 tensor as vLLM registers it.
        let embedding_scale = c
            .architecture
            .scaled_embeddings
            .then(|| round_bf16((c.hidden as f64).sqrt() as f32));
        let mut h = Vec::with_capacity(rows * c.hidden);
        for &t in &tokens[start..] {
            let t = t as usize;
            if t >= c.vocab {
                return Err(CollectError::Unsupported {
                    platform: self.format().to_string(),
                    model: c.arch.clone(),
                    reason: format!("token {t} is outside the vocabulary of {}", c.vocab),
                });
            }
            let row = self.tables.embed.row(t, c.hidden);
            match embedding_scale {
                Some(s) => h.extend(row.into_iter().map(|e| round_bf16(e * s))),
                None => h.extend(row),
            }
        }
        let sliding = c.architecture.sliding;
        // The new positions' rotations; the windowed layers turn unscaled (vLLM's local rotary
        // embedding).
        let full = Self::rotary_table(&self.inverse_frequencies(false), start..n, c.rope_linear);
        let windowed =
            sliding.map(|_| Self::rotary_table(&self.inverse_frequencies(true), start..n, None));
        // `h` is the last block's output, `residual` the running sum stored in bf16.
        let mut residual: Option<Vec<f32>> = None;
        for (i, (layer, (keys, values))) in self.layers.iter().zip(&mut past.layers).enumerate() {
            let window = sliding.filter(|s| s.windowed(i));
            let rotary = match (&windowed, window) {
                (Some(table), Some(_)) => table,
                _ => &full,
            };
            let x = match &mut residual {
                None => {
                    let x = self.rms_norm(&h, &layer.attn_norm);
                    residual = Some(h.clone());
                    x
                }
                Some(r) => self.add_norm(&h, r, &layer.attn_norm),
            };
            let bias = |i: usize| layer.qkv_bias.as_ref().map(|b| b[i].as_slice());
            let mut q = self.linear(&x, rows, &layer.q, bias(0))?;
            let mut k = self.linear(&x, rows, &layer.k, bias(1))?;
            let mut v = self.linear(&x, rows, &layer.v, bias(2))?;
            if let Some([q_norm, k_norm]) = &layer.qk_norm {
                q = self.rms_norm(&q, q_norm);
                k = self.rms_norm(&k, k_norm);
            }
            self.rope(&mut q, rotary, c.heads);
            self.rope(&mut k, rotary, c.kv_heads);
            self.cached(&mut k);
            self.cached(&mut v);
            keys.extend(k);
            values.extend(v);
            let attended = self.attention(&q, keys, values, start, window.map(|s| s.window));
            let mut o = self.linear(&attended, rows, &layer.o, None)?;
            if let Some([after_attention, _]) = &layer.post_norms {
                o = self.rms_norm(&o, after_attention);
            }
            let r = residual.as_mut().expect("set above");
            let x = self.add_norm(&o, r, &layer.ffn_norm);
            let gate = self.linear(&x, rows, &layer.gate, None)?;
            let up = self.linear(&x, rows, &layer.up, None)?;
            h = self.linear(&self.gated(&gate, &up), rows, &layer.down, None)?;
            if let Some([_, after_mlp]) = &layer.post_norms {
                h = self.rms_norm(&h, after_mlp);
            }
        }
        past.tokens = tokens.to_vec();
        Ok((h, residual))
    }
}

/// A norm's weights as the served path multiplies by them: llama's in bf16, gemma's factor
/// `1 + w` in f32 (vLLM's `weight.float() + 1.0` of the bf16 parameter `w`).
fn norm_factor(c: &ModelConfig, w: &[f32]) -> Vec<f32> {
    match c.architecture.unit_offset_norms {
        true => w.iter().map(|w| round_bf16(*w) + 1.0).collect(),
        false => bf16s(w),
    }
}

/// GELU with the tanh approximation as PyTorch's CPU kernel computes it in f32.
fn gelu_tanh(x: f32) -> f32 {
    const BETA: f32 = std::f32::consts::SQRT_2 * std::f32::consts::FRAC_2_SQRT_PI * 0.5;
    const KAPPA: f32 = 0.044715;
    let inner = BETA * (x + KAPPA * x * x * x);
    0.5 * x * (1.0 + inner.tanh())
}

/// The INT4 group sizes publishers use (32, 64, 128) that divide every one of `widths`, as
/// `int4-w4a16-gN` words, or "none".
fn fitting_groups(widths: &[usize]) -> String {
    let fitting: Vec<String> = [32, 64, 128]
        .into_iter()
        .filter(|g| widths.iter().all(|w| w % g == 0))
        .map(|g| format!("int4-w4a16-g{g}"))
        .collect();
    if fitting.is_empty() {
        "none".into()
    } else {
        fitting.join(", ")
    }
}
