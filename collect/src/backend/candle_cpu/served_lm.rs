//! A llama model as vLLM's CPU path computes it at one of the market's formats
//! (`crate::scheme`), read from vLLM 0.32's sources: the model's dtype bf16 (weights and the
//! stored residual in bf16); the residual added in f32 and normalised unrounded (its native
//! `fused_add_rms_norm`: the sum is stored in bf16 for the next layer, the norm reads the f32
//! sum), the normalised row rounded to bf16 before the bf16 multiply by its weight; the rotary
//! embedding by its CPU kernel (f32 arithmetic on the bf16 cos/sin cache, one rounding);
//! SiLU and the multiply as two bf16 PyTorch operations; attention with an f32 softmax and f32
//! accumulation; every linear layer by its scheme (weights quantised once, activations at run
//! time, the GEMM in f32 on candle's kernels, its output rounded to bf16); the embeddings and
//! `lm_head` unquantised. Logits are the last position's bf16 values read as f32 (vLLM's
//! log_softmax then runs in f32 on them).

use std::sync::Arc;

use candle_core::{Device, Tensor};
use hspi_datasets::{CachedWeights, KvCache, NumericFormat};

use super::compact_matrix::{read_array, read_u64, write_array, CompactMatrix};
use crate::error::{CollectError, Result};
use crate::rounding::{truncate_fp8_e4m3, truncate_fp8_e5m2};
use crate::scheme::{self, round_bf16, LinearScheme};
use crate::zoo::llama_weights::{LlamaWeights, ModelConfig};

/// A linear layer: the scheme's weights (`[out, in]`), held compact between passes.
struct Linear {
    weight: CompactMatrix,
    cols: usize,
    rows: usize,
}

impl Linear {
    /// The weights ready for the GEMM, transposed to `[in, out]` (made for one pass: holding
    /// every format's as f32 took 16 times a model's f32 size).
    fn transposed(&self) -> Result<Tensor> {
        Ok(
            Tensor::from_vec(self.weight.values(), (self.rows, self.cols), &Device::Cpu)?
                .t()?
                .contiguous()?,
        )
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
}

pub struct ServedLm {
    config: ModelConfig,
    scheme: Box<dyn LinearScheme>,
    /// vLLM's fp8 KV cache, where the format has one: keys and values stored rounded.
    kv_cache: Option<KvCache>,
    tables: Arc<Tables>,
    layers: Vec<Layer>,
    final_norm: Vec<f32>,
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
    pub fn new(weights: &LlamaWeights) -> Arc<Tables> {
        let hidden = weights.config.hidden;
        Arc::new(Tables {
            embed: CompactMatrix::new(bf16s(&weights.embed), hidden),
            lm_head: weights
                .lm_head
                .as_deref()
                .map(|h| CompactMatrix::new(bf16s(h), hidden)),
        })
    }
}

/// The first bytes of a kept served-path file, and its last (a file cut short lacks them).
const KEPT_MAGIC: &[u8] = b"hspi served-lm 1\n";
const KEPT_END: &[u8] = b"end\n";

fn bf16s(v: &[f32]) -> Vec<f32> {
    v.iter().map(|x| round_bf16(*x)).collect()
}

impl ServedLm {
    pub fn new(weights: &LlamaWeights, format: NumericFormat) -> Result<ServedLm> {
        Self::with_tables(weights, format, Tables::new(weights))
    }

    /// `weights` at `format`, its embeddings and output projection `tables` (shared by the
    /// model's formats).
    pub fn with_tables(
        weights: &LlamaWeights,
        format: NumericFormat,
        tables: Arc<Tables>,
    ) -> Result<ServedLm> {
        let scheme = scheme::serving(format).ok_or_else(|| CollectError::Unsupported {
            platform: format.to_string(),
            model: "llama".into(),
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
                model: "llama".into(),
                reason: format!(
                    "the checkpoint's layers are stored in {stored}: it is served at {stored} only"
                ),
            });
        }
        let c = &weights.config;
        if let Some(cols) = [c.hidden, c.intermediate]
            .into_iter()
            .find(|cols| !scheme.fits(*cols))
        {
            return Err(CollectError::Unsupported {
                platform: format.to_string(),
                model: "llama".into(),
                reason: format!(
                    "{format} cannot store a layer {cols} wide (its group does not divide it); \
                     groups that divide every width of this model: {}",
                    fitting_groups(&[c.hidden, c.intermediate])
                ),
            });
        }
        // A published checkpoint's layers are already the format's values; others are quantised
        // here from their bf16 values.
        let stored = weights.quantized.is_some();
        let linear = |w: &[f32], rows: usize, cols: usize| -> Result<Linear> {
            Ok(Linear {
                weight: CompactMatrix::new(w.to_vec(), cols),
                cols,
                rows,
            })
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
            layers.push(Layer {
                attn_norm: bf16s(&l.attn_norm),
                q: linear(q.1, q.2, q.3)?,
                k: linear(k.1, k.2, k.3)?,
                v: linear(v.1, v.2, v.3)?,
                o: linear(o.1, o.2, o.3)?,
                ffn_norm: bf16s(&l.ffn_norm),
                gate: linear(gate.1, gate.2, gate.3)?,
                up: linear(up.1, up.2, up.3)?,
                down: linear(down.1, down.2, down.3)?,
            });
        }
        Ok(ServedLm {
            config: c.clone(),
            scheme,
            kv_cache: format.kv_cache(),
            tables,
            layers,
            final_norm: bf16s(&weights.final_norm),
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
                norm(w, &l.attn_norm)?;
                norm(w, &l.ffn_norm)?;
                for linear in [&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down] {
                    w.write_all(&(linear.rows as u64).to_le_bytes())?;
                    w.write_all(&(linear.cols as u64).to_le_bytes())?;
                    linear.weight.write(w)?;
                }
            }
            norm(w, &self.final_norm)?;
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
        let norm = |r: &mut std::io::BufReader<std::fs::File>| -> Option<Vec<f32>> {
            let n = read_array(r, f32::from_le_bytes).ok()?;
            (n.len() == config.hidden).then_some(n)
        };
        let linear = |r: &mut std::io::BufReader<std::fs::File>| -> Option<Linear> {
            let (rows, cols) = (read_u64(r).ok()? as usize, read_u64(r).ok()? as usize);
            let weight = CompactMatrix::read(r).ok()?;
            (weight.len() == rows * cols).then_some(Linear { weight, cols, rows })
        };
        let mut layers = Vec::with_capacity(config.layers);
        for _ in 0..config.layers {
            let (attn_norm, ffn_norm) = (norm(&mut r)?, norm(&mut r)?);
            layers.push(Layer {
                attn_norm,
                ffn_norm,
                q: linear(&mut r)?,
                k: linear(&mut r)?,
                v: linear(&mut r)?,
                o: linear(&mut r)?,
                gate: linear(&mut r)?,
                up: linear(&mut r)?,
                down: linear(&mut r)?,
            });
        }
        let final_norm = norm(&mut r)?;
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
        })
    }

    /// `x` (`[tokens, in]`) through a linear layer: the scheme's activations, an f32 GEMM, the
    /// output in bf16.
    fn linear(&self, x: &[f32], tokens: usize, layer: &Linear) -> Result<Vec<f32>> {
        let mut a = x.to_vec();
        self.scheme.activations(&mut a, layer.cols);
        let a = Tensor::from_vec(a, (tokens, layer.cols), &Device::Cpu)?;
        let y = a
            .matmul(&layer.transposed()?)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        debug_assert_eq!(y.len(), tokens * layer.rows);
        Ok(bf16s(&y))
    }

    /// vLLM's native RMSNorm on each row of `x` (f32 values): f32 statistics, the normalised row
    /// rounded to bf16, times the bf16 weight in bf16.
    fn rms_norm(&self, x: &[f32], weight: &[f32]) -> Vec<f32> {
        let d = weight.len();
        let mut out = Vec::with_capacity(x.len());
        for row in x.chunks(d) {
            let mean = row.iter().map(|v| v * v).sum::<f32>() / d as f32;
            let inv = 1.0 / (mean + self.config.rms_eps).sqrt();
            out.extend(
                row.iter()
                    .zip(weight)
                    .map(|(v, w)| round_bf16(round_bf16(v * inv) * w)),
            );
        }
        out
    }

    /// vLLM's `fused_add_rms_norm`: `hidden + residual` in f32, stored rounded as the new
    /// residual, and normalised as it is (unrounded).
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
        self.rms_norm(&sum, weight)
    }

    /// The rotary cache for positions `0..tokens`: per position and pair, cos and sin of f32
    /// frequencies kept in bf16 (vLLM's cos/sin cache), computed once per forward pass.
    fn rotary_table(&self, tokens: usize) -> Vec<(f32, f32)> {
        let d = self.config.head_dim();
        let half = d / 2;
        let mut table = Vec::with_capacity(tokens * half);
        for t in 0..tokens {
            for i in 0..half {
                let inv_freq = 1.0 / self.config.rope_theta.powf((2 * i) as f32 / d as f32);
                let angle = t as f32 * inv_freq;
                table.push((round_bf16(angle.cos()), round_bf16(angle.sin())));
            }
        }
        table
    }

    /// The rotary embedding (Hugging Face's pairs `i, i + d/2`) as vLLM's kernel computes it:
    /// the rotation in f32 on the bf16 cache, one rounding.
    fn rope(&self, x: &mut [f32], table: &[(f32, f32)], heads: usize) {
        let d = self.config.head_dim();
        let half = d / 2;
        for (t, row) in table.chunks(half).enumerate() {
            for (i, &(cos, sin)) in row.iter().enumerate() {
                for h in 0..heads {
                    let at = (t * heads + h) * d;
                    let (a, b) = (x[at + i], x[at + i + half]);
                    x[at + i] = round_bf16(a * cos - b * sin);
                    x[at + i + half] = round_bf16(b * cos + a * sin);
                }
            }
        }
    }

    /// Causal attention per head (grouped key-value heads): scores from the bf16 queries and
    /// keys accumulated in f32 and scaled, softmax in f32, the weighted sum of the bf16 values
    /// accumulated in f32 and rounded once.
    fn attention(&self, q: &[f32], k: &[f32], v: &[f32], tokens: usize) -> Vec<f32> {
        let c = &self.config;
        let d = c.head_dim();
        let group = c.heads / c.kv_heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut out = vec![0f32; tokens * c.heads * d];
        let mut weights = vec![0f32; tokens];
        for h in 0..c.heads {
            let kvh = h / group;
            for t in 0..tokens {
                let qv = &q[(t * c.heads + h) * d..][..d];
                let mut top = f32::NEG_INFINITY;
                for (s, w) in weights.iter_mut().enumerate().take(t + 1) {
                    let kv = &k[(s * c.kv_heads + kvh) * d..][..d];
                    *w = qv.iter().zip(kv).map(|(a, b)| a * b).sum::<f32>() * scale;
                    top = top.max(*w);
                }
                let total: f32 = weights[..=t]
                    .iter_mut()
                    .map(|w| {
                        *w = (*w - top).exp();
                        *w
                    })
                    .sum();
                let o = &mut out[(t * c.heads + h) * d..][..d];
                for (s, w) in weights.iter().enumerate().take(t + 1) {
                    let p = w / total;
                    let vv = &v[(s * c.kv_heads + kvh) * d..][..d];
                    o.iter_mut().zip(vv).for_each(|(o, v)| *o += p * v);
                }
                o.iter_mut().for_each(|x| *x = round_bf16(*x));
            }
        }
        out
    }

    /// Logits over the whole vocabulary for the token after `tokens`, from a fresh context.
    pub fn next_token_logits(&self, tokens: &[u32]) -> Result<Vec<f32>> {
        let n = tokens.len();
        Ok(self.logits_from(tokens, n)?.pop().unwrap_or_default())
    }

    /// Logits over the whole vocabulary after each prefix `tokens[..k]`, `k` from `from` to the
    /// whole, from one causal pass over `tokens` (teacher forcing on given tokens).
    pub fn logits_from(&self, tokens: &[u32], from: usize) -> Result<Vec<Vec<f32>>> {
        let c = &self.config;
        let n = tokens.len();
        if n == 0 {
            return Err(CollectError::Unsupported {
                platform: self.format().to_string(),
                model: "llama".into(),
                reason: "an empty prompt has no next token".into(),
            });
        }
        let mut h = Vec::with_capacity(n * c.hidden);
        for &t in tokens {
            let t = t as usize;
            if t >= c.vocab {
                return Err(CollectError::Unsupported {
                    platform: self.format().to_string(),
                    model: "llama".into(),
                    reason: format!("token {t} is outside the vocabulary of {}", c.vocab),
                });
            }
            h.extend(self.tables.embed.row(t, c.hidden));
        }
        let rotary = self.rotary_table(n);
        // `h` is the last block's output, `residual` the running sum stored in bf16.
        let mut residual: Option<Vec<f32>> = None;
        for layer in &self.layers {
            let x = match &mut residual {
                None => {
                    let x = self.rms_norm(&h, &layer.attn_norm);
                    residual = Some(h.clone());
                    x
                }
                Some(r) => self.add_norm(&h, r, &layer.attn_norm),
            };
            let mut q = self.linear(&x, n, &layer.q)?;
            let mut k = self.linear(&x, n, &layer.k)?;
            let mut v = self.linear(&x, n, &layer.v)?;
            self.rope(&mut q, &rotary, c.heads);
            self.rope(&mut k, &rotary, c.kv_heads);
            self.cached(&mut k);
            self.cached(&mut v);
            let attended = self.attention(&q, &k, &v, n);
            let o = self.linear(&attended, n, &layer.o)?;
            let r = residual.as_mut().expect("set above");
            let x = self.add_norm(&o, r, &layer.ffn_norm);
            let gate = self.linear(&x, n, &layer.gate)?;
            let up = self.linear(&x, n, &layer.up)?;
            let act: Vec<f32> = gate
                .iter()
                .zip(&up)
                .map(|(g, u)| round_bf16(round_bf16(g / (1.0 + (-g).exp())) * u))
                .collect();
            h = self.linear(&act, n, &layer.down)?;
        }
        // Each row separately through the head, as the last row alone always was (a GEMM's
        // blocking may depend on its row count: one row keeps the generated answers' bits).
        let from = from.clamp(1, n);
        let head = self.tables.lm_head.as_ref().unwrap_or(&self.tables.embed);
        let lm_head_t = Tensor::from_vec(head.values(), (c.vocab, c.hidden), &Device::Cpu)?
            .t()?
            .contiguous()?;
        let mut out = Vec::with_capacity(n + 1 - from);
        for k in from..=n {
            let at = (k - 1) * c.hidden..k * c.hidden;
            let last = match &residual {
                Some(r) => {
                    let mut r = r[at.clone()].to_vec();
                    self.add_norm(&h[at], &mut r, &self.final_norm)
                }
                None => self.rms_norm(&h[at], &self.final_norm),
            };
            let x = Tensor::from_vec(last, (1, c.hidden), &Device::Cpu)?;
            let logits = x.matmul(&lm_head_t)?.flatten_all()?.to_vec1::<f32>()?;
            out.push(bf16s(&logits));
        }
        Ok(out)
    }
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
