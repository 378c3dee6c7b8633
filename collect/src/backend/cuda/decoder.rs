//! Decoder language models of every dense family (`crate::zoo::architecture`: llama with Llama
//! 3's rotary scaling, mistral, qwen2, qwen3, gemma3) on the GPU: every matrix product a cuBLAS
//! GEMM at the platform's precision; norms, the rotary embedding, attention (over a window where
//! the layer has one) and the gated MLP as NVRTC kernels (`decoder.cu`). The weights are read
//! once by `crate::zoo::decoder_weights` (a GGUF file dequantised, or a checkpoint directory: the
//! same matrices in Hugging Face's layout whichever it is) and stored on the device in the
//! platform's operand type. A batch packs its prompts' tokens into the rows of one GEMM, as a
//! serving engine's prefill does, so batch size changes the GEMM shapes cuBLAS sees.

use std::path::Path;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use half::{bf16, f16};
use hspi_datasets::Platform;

use super::cuda_err;
use super::gemm::{DeviceMatrix, Gemm};
use super::kernels::{grid, int, Kernels, Storage};
use crate::backend::{AllPositions, Batch, Runner};
use crate::error::{CollectError, Result};
use crate::zoo::architecture::Activation;
use crate::zoo::decoder_weights::{self, inverse_frequencies, rotary_position, ModelConfig};

/// The longest prompt the attention kernel takes (its shared score buffer).
const MAX_KEYS: usize = 1024;
/// The widest head the attention kernel takes (one thread per element, one block per head).
const MAX_HEAD_DIM: usize = 256;

struct Block {
    attn_norm: CudaSlice<f32>,
    wq: DeviceMatrix,
    wk: DeviceMatrix,
    wv: DeviceMatrix,
    wo: DeviceMatrix,
    ffn_norm: CudaSlice<f32>,
    gate: DeviceMatrix,
    up: DeviceMatrix,
    down: DeviceMatrix,
    /// The query, key and value biases (qwen2).
    qkv_bias: Option<[CudaSlice<f32>; 3]>,
    /// Each head's query and key norm (qwen3, gemma3).
    qk_norm: Option<[CudaSlice<f32>; 2]>,
    /// The norms after attention and after the MLP (gemma3).
    post_norms: Option<[CudaSlice<f32>; 2]>,
    /// The last positions this layer attends to, where it is windowed (gemma3).
    window: Option<usize>,
}

struct Functions {
    rms_norm: CudaFunction,
    rope: CudaFunction,
    attention: CudaFunction,
    gated: CudaFunction,
    add_store: CudaFunction,
    add_row_bias: CudaFunction,
    widen: CudaFunction,
    gather_rows: CudaFunction,
}

/// A rotary table: cos and sin per position and pair, `[MAX_KEYS, head_dim / 2]`.
struct Rotary {
    cos: CudaSlice<f32>,
    sin: CudaSlice<f32>,
}

pub struct CudaLm {
    platform: Platform,
    stream: Arc<CudaStream>,
    gemm: Gemm,
    kernels: Kernels,
    f: Functions,
    config: ModelConfig,
    /// [vocab, dim] on the host, rounded to the storage format (and scaled by √hidden where the
    /// family does, rounded again): a lookup is exact.
    embedding: Vec<f32>,
    blocks: Vec<Block>,
    out_norm: CudaSlice<f32>,
    output: DeviceMatrix,
    /// The full-attention layers' rotation, and the windowed layers' where they have their own.
    rotary: Rotary,
    windowed_rotary: Option<Rotary>,
}

fn round(values: &mut [f32], storage: Storage) {
    match storage {
        Storage::F16 => values
            .iter_mut()
            .for_each(|v| *v = f16::from_f32(*v).to_f32()),
        Storage::Bf16 => values
            .iter_mut()
            .for_each(|v| *v = bf16::from_f32(*v).to_f32()),
        Storage::F32 => {}
    }
}

/// What the GPU pass does not compute, refused before the GPU is opened.
fn refusal(config: &ModelConfig) -> Option<String> {
    if config.architecture.experts.is_some() {
        return Some(format!(
            "the CUDA pass computes dense models only and it is a {} mixture of experts; it runs \
             at llama.cpp's formats on the CPU (f32 f16 q8_0 q4_0 q4_1 q6_k q5_k_m q4_k_m)",
            config.arch
        ));
    }
    let d = config.head_dim();
    if d > MAX_HEAD_DIM || d % 2 == 1 {
        return Some(format!(
            "its heads are {d} wide: the CUDA attention kernel takes even widths up to \
             {MAX_HEAD_DIM}"
        ));
    }
    None
}

/// cos and sin of every position's angle for `inv_freq`, positions divided by `linear` first
/// where the layer scales them.
fn rotary_angles(inv_freq: &[f32], linear: Option<f32>) -> (Vec<f32>, Vec<f32>) {
    let angles: Vec<f32> = (0..MAX_KEYS)
        .flat_map(|p| {
            let position = rotary_position(p, linear);
            inv_freq.iter().map(move |f| position * f)
        })
        .collect();
    (
        angles.iter().map(|a| a.cos()).collect(),
        angles.iter().map(|a| a.sin()).collect(),
    )
}

impl CudaLm {
    /// The model at `path` (a GGUF file or a checkpoint directory) on the GPU `platform` names.
    pub fn load(path: &Path, platform: &Platform) -> Result<CudaLm> {
        let config = ModelConfig::of_weights(path)?;
        if let Some(reason) = refusal(&config) {
            return Err(CollectError::BadWeights {
                model: format!("a {} model", config.arch),
                path: path.into(),
                reason,
            });
        }
        let weights = decoder_weights::load(path)?;
        let c = weights.config.clone();
        let (stream, gemm, kernels) = super::open(platform, &c.arch)?;
        let storage = gemm.storage();
        let f = Functions {
            rms_norm: kernels.function("rms_norm")?,
            rope: kernels.function("rope")?,
            attention: kernels.function("attention")?,
            gated: kernels.function("gated")?,
            add_store: kernels.function("add_store")?,
            add_row_bias: kernels.function("add_row_bias")?,
            widen: kernels.function("widen")?,
            gather_rows: kernels.function("gather_rows")?,
        };
        let a = &c.architecture;
        let matrix = |values: &[f32]| super::image::upload(&stream, values, storage);
        let vector = |values: &[f32]| stream.clone_htod(values).map_err(cuda_err);
        // A norm multiplies by its weight, gemma's by `1 + w` (the value its GGUF file stores).
        let norm = |w: &[f32]| match a.unit_offset_norms {
            true => vector(&w.iter().map(|w| w + 1.0).collect::<Vec<_>>()),
            false => vector(w),
        };
        let pair =
            |[x, y]: &[Vec<f32>; 2]| -> Result<[CudaSlice<f32>; 2]> { Ok([norm(x)?, norm(y)?]) };
        let mut blocks = Vec::with_capacity(c.layers);
        for (i, l) in weights.layers.iter().enumerate() {
            blocks.push(Block {
                attn_norm: norm(&l.attn_norm)?,
                wq: matrix(&l.q)?,
                wk: matrix(&l.k)?,
                wv: matrix(&l.v)?,
                wo: matrix(&l.o)?,
                ffn_norm: norm(&l.ffn_norm)?,
                gate: matrix(&l.gate)?,
                up: matrix(&l.up)?,
                down: matrix(&l.down)?,
                qkv_bias: match &l.qkv_bias {
                    Some([q, k, v]) => Some([vector(q)?, vector(k)?, vector(v)?]),
                    None => None,
                },
                qk_norm: l.qk_norm.as_ref().map(pair).transpose()?,
                post_norms: l.post_norms.as_ref().map(pair).transpose()?,
                window: a.sliding.filter(|s| s.windowed(i)).map(|s| s.window),
            });
        }
        let output = matrix(weights.lm_head.as_deref().unwrap_or(&weights.embed))?;
        let out_norm = norm(&weights.final_norm)?;
        let mut embedding = weights.embed;
        round(&mut embedding, storage);
        if a.scaled_embeddings {
            // √hidden in the storage format, as a model's dtype holds it.
            let mut factor = [(c.hidden as f64).sqrt() as f32];
            round(&mut factor, storage);
            embedding.iter_mut().for_each(|e| *e *= factor[0]);
            round(&mut embedding, storage);
        }
        let upload = |(cos, sin): (Vec<f32>, Vec<f32>)| -> Result<Rotary> {
            Ok(Rotary {
                cos: vector(&cos)?,
                sin: vector(&sin)?,
            })
        };
        // Full-attention layers: Llama 3's scaled frequencies or the model's base, positions
        // scaled linearly where the model says so; windowed layers turn on their own base,
        // unscaled.
        let full = weights
            .rope_inv_freq
            .clone()
            .unwrap_or_else(|| inverse_frequencies(c.rope_theta, c.head_dim()));
        let rotary = upload(rotary_angles(&full, c.rope_linear))?;
        let windowed_rotary = match a.sliding {
            Some(s) => Some(upload(rotary_angles(
                &inverse_frequencies(s.rope_theta, c.head_dim()),
                None,
            ))?),
            None => None,
        };
        Ok(CudaLm {
            platform: platform.clone(),
            stream,
            gemm,
            kernels,
            f,
            config: c,
            embedding,
            blocks,
            out_norm,
            output,
            rotary,
            windowed_rotary,
        })
    }

    /// y = x · Wᵀ for x [rows, k], as f32 [rows, out].
    fn linear(
        &self,
        w: &DeviceMatrix,
        x: &CudaSlice<f32>,
        out: usize,
        rows: usize,
        k: usize,
    ) -> Result<CudaSlice<f32>> {
        let storage = self.gemm.storage();
        let operand = match storage {
            Storage::F32 => DeviceMatrix::F32(x.clone()),
            half => DeviceMatrix::Half(self.kernels.to_half_bits(x, half)?),
        };
        let y = self.gemm.linear(w, &operand, out, rows, k)?;
        let n = rows * out;
        let mut wide = self.kernels.alloc::<f32>(n)?;
        let (ni, kind) = (int(n), storage as i32);
        let mut launch = self.stream.launch_builder(&self.f.widen);
        match &y {
            DeviceMatrix::F32(y) => launch.arg(y),
            DeviceMatrix::Half(y) => launch.arg(y),
        };
        launch.arg(&mut wide).arg(&ni).arg(&kind);
        // SAFETY: reads y[0..n] in its operand type, writes wide[0..n].
        unsafe { launch.launch(grid(n)) }.map_err(cuda_err)?;
        Ok(wide)
    }

    /// Each row of `dim` values normalised and multiplied by `w`.
    fn rms_norm(
        &self,
        x: &CudaSlice<f32>,
        w: &CudaSlice<f32>,
        rows: usize,
        dim: usize,
    ) -> Result<CudaSlice<f32>> {
        let mut y = self.kernels.alloc::<f32>(rows * dim)?;
        let (d, eps, kind) = (int(dim), self.config.rms_eps, self.gemm.storage() as i32);
        let mut launch = self.stream.launch_builder(&self.f.rms_norm);
        launch
            .arg(x)
            .arg(w)
            .arg(&mut y)
            .arg(&d)
            .arg(&eps)
            .arg(&kind);
        let cfg = LaunchConfig {
            grid_dim: (rows as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: one block per row of `dim` values; reads x and w, writes y.
        unsafe { launch.launch(cfg) }.map_err(cuda_err)?;
        Ok(y)
    }

    fn rope(
        &self,
        x: &mut CudaSlice<f32>,
        rotary: &Rotary,
        pos: &CudaSlice<i32>,
        rows: usize,
        heads: usize,
    ) -> Result<()> {
        let hd = self.config.head_dim();
        let (r, h, d, kind) = (int(rows), int(heads), int(hd), self.gemm.storage() as i32);
        let mut launch = self.stream.launch_builder(&self.f.rope);
        launch
            .arg(x)
            .arg(&rotary.cos)
            .arg(&rotary.sin)
            .arg(pos)
            .arg(&r)
            .arg(&h)
            .arg(&d)
            .arg(&kind);
        // SAFETY: positions are below MAX_KEYS (checked by the caller); rows·heads·hd/2 pairs.
        unsafe { launch.launch(grid(rows * heads * hd / 2)) }.map_err(cuda_err)?;
        Ok(())
    }

    fn attention(
        &self,
        q: &CudaSlice<f32>,
        k: &CudaSlice<f32>,
        v: &CudaSlice<f32>,
        seq_start: &CudaSlice<i32>,
        rows: usize,
        window: Option<usize>,
    ) -> Result<CudaSlice<f32>> {
        let c = &self.config;
        let d = c.head_dim();
        let mut out = self.kernels.alloc::<f32>(rows * c.heads * d)?;
        let (nh, nk, hd) = (int(c.heads), int(c.kv_heads), int(d));
        // `head_dim ** -0.5` as the serving engines compute it, in doubles.
        let scale = (d as f64).powf(-0.5) as f32;
        let (window, kind) = (int(window.unwrap_or(0)), self.gemm.storage() as i32);
        let mut launch = self.stream.launch_builder(&self.f.attention);
        launch
            .arg(q)
            .arg(k)
            .arg(v)
            .arg(&mut out)
            .arg(seq_start)
            .arg(&nh)
            .arg(&nk)
            .arg(&hd)
            .arg(&scale)
            .arg(&window)
            .arg(&kind);
        let cfg = LaunchConfig {
            grid_dim: (rows as u32, c.heads as u32, 1),
            block_dim: (d.next_power_of_two() as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: one block per (row, head) of at most MAX_HEAD_DIM threads (checked at load),
        // the threads past head_dim adding zeros; every row's keys lie in its own sequence,
        // fewer than MAX_KEYS.
        unsafe { launch.launch(cfg) }.map_err(cuda_err)?;
        Ok(out)
    }

    fn elementwise(
        &self,
        f: &CudaFunction,
        x: &mut CudaSlice<f32>,
        y: &CudaSlice<f32>,
    ) -> Result<()> {
        let n = x.len();
        let (ni, kind) = (int(n), self.gemm.storage() as i32);
        let mut launch = self.stream.launch_builder(f);
        launch.arg(x).arg(y).arg(&ni).arg(&kind);
        // SAFETY: x and y hold n values each.
        unsafe { launch.launch(grid(n)) }.map_err(cuda_err)?;
        Ok(())
    }

    /// `x` (rows of `bias.len()` values) plus the bias, stored.
    fn add_bias(&self, x: &mut CudaSlice<f32>, bias: &CudaSlice<f32>) -> Result<()> {
        let n = x.len();
        let (ni, cols, kind) = (int(n), int(bias.len()), self.gemm.storage() as i32);
        let mut launch = self.stream.launch_builder(&self.f.add_row_bias);
        launch.arg(x).arg(bias).arg(&ni).arg(&cols).arg(&kind);
        // SAFETY: x holds n values, bias `cols`; every index is taken modulo cols.
        unsafe { launch.launch(grid(n)) }.map_err(cuda_err)?;
        Ok(())
    }

    /// The gate's activation times the up projection, stored in `gate`.
    fn gated(&self, gate: &mut CudaSlice<f32>, up: &CudaSlice<f32>) -> Result<()> {
        let n = gate.len();
        let act = match self.config.architecture.activation {
            Activation::Silu => 0i32,
            Activation::GeluTanh => 1,
        };
        let (ni, kind) = (int(n), self.gemm.storage() as i32);
        let mut launch = self.stream.launch_builder(&self.f.gated);
        launch.arg(gate).arg(up).arg(&ni).arg(&act).arg(&kind);
        // SAFETY: gate and up hold n values each.
        unsafe { launch.launch(grid(n)) }.map_err(cuda_err)?;
        Ok(())
    }

    /// Next-token logits over the whole vocabulary for each prompt, all prompts in one batch.
    pub fn next_token_logits(&self, prompts: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let (x, ends) = self.hidden(prompts)?;
        let last: Vec<i32> = ends.iter().map(|e| e - 1).collect();
        self.head(&x, &last)
    }

    /// Logits over the whole vocabulary after each prefix `tokens[..k]`, `k` from `from` to the
    /// whole, from one causal pass over `tokens` (teacher forcing on given tokens, as a serving
    /// engine's prompt logprobs are computed: every position's row in the same GEMMs).
    pub fn logits_from(&self, tokens: &[u32], from: usize) -> Result<Vec<Vec<f32>>> {
        let (x, _) = self.hidden(&[tokens])?;
        let n = tokens.len();
        let rows: Vec<i32> = (from.clamp(1, n)..=n).map(|k| (k - 1) as i32).collect();
        self.head(&x, &rows)
    }

    /// The last block's output for every token of `prompts`, packed into rows in order, and
    /// where each prompt's rows end.
    fn hidden(&self, prompts: &[&[u32]]) -> Result<(CudaSlice<f32>, Vec<i32>)> {
        let c = &self.config;
        let mut tokens = Vec::new();
        let (mut pos, mut seq_start, mut ends) = (Vec::new(), Vec::new(), Vec::new());
        for prompt in prompts {
            if prompt.is_empty() || prompt.len() > MAX_KEYS {
                return Err(CollectError::Cuda(format!(
                    "a prompt of {} tokens: the GPU backend takes 1 to {MAX_KEYS}",
                    prompt.len()
                )));
            }
            let start = tokens.len();
            for (p, t) in prompt.iter().enumerate() {
                if *t as usize >= c.vocab {
                    return Err(CollectError::Cuda(format!(
                        "token id {t} is outside the vocabulary of {}",
                        c.vocab
                    )));
                }
                tokens.push(*t as usize);
                pos.push(p as i32);
                seq_start.push(start as i32);
            }
            ends.push(tokens.len() as i32);
        }
        let rows = tokens.len();
        let dim = c.hidden;
        let x_host: Vec<f32> = tokens
            .iter()
            .flat_map(|t| &self.embedding[t * dim..(t + 1) * dim])
            .copied()
            .collect();
        let upload_i32 = |v: &[i32]| self.stream.clone_htod(v).map_err(cuda_err);
        let (pos, seq_start) = (upload_i32(&pos)?, upload_i32(&seq_start)?);
        let mut x = self.stream.clone_htod(&x_host).map_err(cuda_err)?;
        let hd = c.head_dim();
        let (q_dim, kv_dim) = (c.heads * hd, c.kv_heads * hd);
        for b in &self.blocks {
            let h = self.rms_norm(&x, &b.attn_norm, rows, dim)?;
            let mut q = self.linear(&b.wq, &h, q_dim, rows, dim)?;
            let mut k = self.linear(&b.wk, &h, kv_dim, rows, dim)?;
            let mut v = self.linear(&b.wv, &h, kv_dim, rows, dim)?;
            if let Some([bq, bk, bv]) = &b.qkv_bias {
                self.add_bias(&mut q, bq)?;
                self.add_bias(&mut k, bk)?;
                self.add_bias(&mut v, bv)?;
            }
            if let Some([nq, nk]) = &b.qk_norm {
                q = self.rms_norm(&q, nq, rows * c.heads, hd)?;
                k = self.rms_norm(&k, nk, rows * c.kv_heads, hd)?;
            }
            let rotary = match (&self.windowed_rotary, b.window) {
                (Some(windowed), Some(_)) => windowed,
                _ => &self.rotary,
            };
            self.rope(&mut q, rotary, &pos, rows, c.heads)?;
            self.rope(&mut k, rotary, &pos, rows, c.kv_heads)?;
            let att = self.attention(&q, &k, &v, &seq_start, rows, b.window)?;
            let mut o = self.linear(&b.wo, &att, dim, rows, q_dim)?;
            if let Some([after_attention, _]) = &b.post_norms {
                o = self.rms_norm(&o, after_attention, rows, dim)?;
            }
            self.elementwise(&self.f.add_store, &mut x, &o)?;
            let h = self.rms_norm(&x, &b.ffn_norm, rows, dim)?;
            let ffn = c.intermediate;
            let mut g = self.linear(&b.gate, &h, ffn, rows, dim)?;
            let u = self.linear(&b.up, &h, ffn, rows, dim)?;
            self.gated(&mut g, &u)?;
            let mut d = self.linear(&b.down, &g, dim, rows, ffn)?;
            if let Some([_, after_mlp]) = &b.post_norms {
                d = self.rms_norm(&d, after_mlp, rows, dim)?;
            }
            self.elementwise(&self.f.add_store, &mut x, &d)?;
        }
        Ok((x, ends))
    }

    /// The final norm and the output projection of the rows `rows` of `x`, all in one GEMM.
    fn head(&self, x: &CudaSlice<f32>, rows: &[i32]) -> Result<Vec<Vec<f32>>> {
        let (vocab, dim, count) = (self.config.vocab, self.config.hidden, rows.len());
        let indexes = self.stream.clone_htod(rows).map_err(cuda_err)?;
        let mut picked = self.kernels.alloc::<f32>(count * dim)?;
        {
            let (n, d) = (int(count), int(dim));
            let mut launch = self.stream.launch_builder(&self.f.gather_rows);
            launch.arg(x).arg(&mut picked).arg(&indexes).arg(&n).arg(&d);
            // SAFETY: `rows` holds count row indexes of x; picked holds count·dim values.
            unsafe { launch.launch(grid(count * dim)) }.map_err(cuda_err)?;
        }
        let h = self.rms_norm(&picked, &self.out_norm, count, dim)?;
        let logits = self.linear(&self.output, &h, vocab, count, dim)?;
        let flat = self.stream.clone_dtoh(&logits).map_err(cuda_err)?;
        Ok(flat.chunks(vocab).map(<[f32]>::to_vec).collect())
    }
}

impl AllPositions for CudaLm {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    fn logits_from(&mut self, tokens: &[u32], from: usize) -> Result<Vec<Vec<f32>>> {
        CudaLm::logits_from(self, tokens, from)
    }
}

impl Runner for CudaLm {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    fn forward(&mut self, batch: Batch<'_>) -> Result<Vec<Vec<f32>>> {
        self.next_token_logits(batch.tokens(&self.platform)?)
    }
}
