//! Llama-architecture language models (SmolLM2) on the GPU: every matrix product a cuBLAS GEMM at
//! the platform's precision, norms, rotary embedding, attention and the gated MLP as NVRTC
//! kernels (`llama.cu`). The GGUF's matrices are dequantised once on the host and stored on the
//! device in the platform's operand type. A batch packs its prompts' tokens into the rows of one
//! GEMM, as a serving engine's prefill does, so batch size changes the GEMM shapes cuBLAS sees.

use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::gguf_file;
use candle_core::Device;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use half::{bf16, f16};
use hspi_datasets::Platform;

use super::cuda_err;
use super::gemm::{DeviceMatrix, Gemm};
use super::kernels::{grid, int, Kernels, Storage};
use crate::backend::{Batch, Runner};
use crate::error::{CollectError, Result};
use crate::zoo::model_config::ModelConfig;

/// The longest prompt the attention kernel takes (its shared score buffer).
const MAX_KEYS: usize = 1024;

struct Config {
    dim: usize,
    n_head: usize,
    n_kv: usize,
    head_dim: usize,
    eps: f32,
    vocab: usize,
}

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
    ffn: usize,
}

struct Functions {
    rms_norm: CudaFunction,
    rope: CudaFunction,
    attention: CudaFunction,
    silu_mul: CudaFunction,
    add_store: CudaFunction,
    widen: CudaFunction,
    gather_rows: CudaFunction,
}

pub struct CudaLm {
    platform: Platform,
    stream: Arc<CudaStream>,
    gemm: Gemm,
    kernels: Kernels,
    f: Functions,
    config: Config,
    /// [vocab, dim] on the host, rounded to the storage format: a lookup is exact.
    embedding: Vec<f32>,
    blocks: Vec<Block>,
    out_norm: CudaSlice<f32>,
    output: DeviceMatrix,
    cos: CudaSlice<f32>,
    sin: CudaSlice<f32>,
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

impl CudaLm {
    pub fn load(path: &Path, platform: &Platform) -> Result<CudaLm> {
        let bad = |reason: String| CollectError::BadWeights {
            model: "smollm2".into(),
            path: path.into(),
            reason,
        };
        let (stream, gemm, kernels) = super::open(platform, "smollm2")?;
        let storage = gemm.storage();
        let f = Functions {
            rms_norm: kernels.function("rms_norm")?,
            rope: kernels.function("rope")?,
            attention: kernels.function("attention")?,
            silu_mul: kernels.function("silu_mul")?,
            add_store: kernels.function("add_store")?,
            widen: kernels.function("widen")?,
            gather_rows: kernels.function("gather_rows")?,
        };

        let mut file = std::fs::File::open(path).map_err(CollectError::io(path))?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| bad(e.to_string()))?;
        let config = ModelConfig::from_gguf(&content, path)?;
        let rope_scaled =
            content.tensor_infos.contains_key("rope_freqs.weight") || config.rope_linear.is_some();
        crate::zoo::decoder_weights::llama_only(&config, rope_scaled, path, "the CUDA pass")?;
        let (dim, n_head, n_kv, n_layer) =
            (config.hidden, config.heads, config.kv_heads, config.layers);
        let (eps, freq_base) = (config.rms_eps, config.rope_theta);
        let head_dim = dim / n_head;
        if head_dim > 128 || !head_dim.is_power_of_two() {
            return Err(bad(format!(
                "head size {head_dim}: the attention kernel takes powers of two up to 128"
            )));
        }

        let mut tensor = |name: &str| -> Result<(Vec<f32>, Vec<usize>)> {
            let qt = content
                .tensor(&mut file, name, &Device::Cpu)
                .map_err(|e| bad(format!("{name}: {e}")))?;
            let t = qt.dequantize(&Device::Cpu)?;
            let dims = t.dims().to_vec();
            Ok((t.flatten_all()?.to_vec1::<f32>()?, dims))
        };
        let upload_matrix = |values: &[f32]| -> Result<DeviceMatrix> {
            super::image::upload(&stream, values, storage)
        };
        let upload_f32 = |values: &[f32]| stream.clone_htod(values).map_err(cuda_err);

        let (mut embedding, embedding_dims) = tensor("token_embd.weight")?;
        let vocab = embedding_dims[0];
        let output = match content.tensor_infos.contains_key("output.weight") {
            true => upload_matrix(&tensor("output.weight")?.0)?,
            false => upload_matrix(&embedding)?,
        };
        round(&mut embedding, storage);
        let mut blocks = Vec::with_capacity(n_layer);
        for i in 0..n_layer {
            let name = |part: &str| format!("blk.{i}.{part}.weight");
            let (gate, gate_dims) = tensor(&name("ffn_gate"))?;
            blocks.push(Block {
                attn_norm: upload_f32(&tensor(&name("attn_norm"))?.0)?,
                wq: upload_matrix(&tensor(&name("attn_q"))?.0)?,
                wk: upload_matrix(&tensor(&name("attn_k"))?.0)?,
                wv: upload_matrix(&tensor(&name("attn_v"))?.0)?,
                wo: upload_matrix(&tensor(&name("attn_output"))?.0)?,
                ffn_norm: upload_f32(&tensor(&name("ffn_norm"))?.0)?,
                gate: upload_matrix(&gate)?,
                up: upload_matrix(&tensor(&name("ffn_up"))?.0)?,
                down: upload_matrix(&tensor(&name("ffn_down"))?.0)?,
                ffn: gate_dims[0],
            });
        }
        let out_norm = upload_f32(&tensor("output_norm.weight")?.0)?;

        // Rotary tables as candle computes them: θᵢ = base^(−2i/d) in f32, angle = position·θᵢ.
        let half_dim = head_dim / 2;
        let theta: Vec<f32> = (0..head_dim)
            .step_by(2)
            .map(|i| 1f32 / freq_base.powf(i as f32 / head_dim as f32))
            .collect();
        let angles: Vec<f32> = (0..MAX_KEYS)
            .flat_map(|p| theta.iter().map(move |t| p as f32 * t))
            .collect();
        debug_assert_eq!(angles.len(), MAX_KEYS * half_dim);
        let cos = upload_f32(&angles.iter().map(|a| a.cos()).collect::<Vec<_>>())?;
        let sin = upload_f32(&angles.iter().map(|a| a.sin()).collect::<Vec<_>>())?;

        Ok(CudaLm {
            platform: platform.clone(),
            stream,
            gemm,
            kernels,
            f,
            config: Config {
                dim,
                n_head,
                n_kv,
                head_dim,
                eps,
                vocab,
            },
            embedding,
            blocks,
            out_norm,
            output,
            cos,
            sin,
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

    fn rms_norm(
        &self,
        x: &CudaSlice<f32>,
        w: &CudaSlice<f32>,
        rows: usize,
    ) -> Result<CudaSlice<f32>> {
        let dim = self.config.dim;
        let mut y = self.kernels.alloc::<f32>(rows * dim)?;
        let (d, eps, kind) = (int(dim), self.config.eps, self.gemm.storage() as i32);
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
        pos: &CudaSlice<i32>,
        rows: usize,
        heads: usize,
    ) -> Result<()> {
        let hd = self.config.head_dim;
        let (r, h, d, kind) = (int(rows), int(heads), int(hd), self.gemm.storage() as i32);
        let mut launch = self.stream.launch_builder(&self.f.rope);
        launch
            .arg(x)
            .arg(&self.cos)
            .arg(&self.sin)
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
    ) -> Result<CudaSlice<f32>> {
        let c = &self.config;
        let mut out = self.kernels.alloc::<f32>(rows * c.dim)?;
        let (nh, nk, hd) = (int(c.n_head), int(c.n_kv), int(c.head_dim));
        let scale = 1.0 / (c.head_dim as f32).sqrt();
        let kind = self.gemm.storage() as i32;
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
            .arg(&kind);
        let cfg = LaunchConfig {
            grid_dim: (rows as u32, c.n_head as u32, 1),
            block_dim: (c.head_dim as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: one block per (row, head) of head_dim ≤ 128 threads; every row's keys lie in
        // its own sequence, fewer than MAX_KEYS.
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

    /// Next-token logits over the whole vocabulary for each prompt, all prompts in one batch.
    pub fn next_token_logits(&self, prompts: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let c = &self.config;
        let mut tokens = Vec::new();
        let (mut pos, mut seq_start, mut last) = (Vec::new(), Vec::new(), Vec::new());
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
            last.push((tokens.len() - 1) as i32);
        }
        let rows = tokens.len();
        let x_host: Vec<f32> = tokens
            .iter()
            .flat_map(|t| &self.embedding[t * c.dim..(t + 1) * c.dim])
            .copied()
            .collect();
        let upload_i32 = |v: &[i32]| self.stream.clone_htod(v).map_err(cuda_err);
        let (pos, seq_start, last) = (
            upload_i32(&pos)?,
            upload_i32(&seq_start)?,
            upload_i32(&last)?,
        );
        let mut x = self.stream.clone_htod(&x_host).map_err(cuda_err)?;
        let (kv_dim, dim) = (c.n_kv * c.head_dim, c.dim);
        for b in &self.blocks {
            let h = self.rms_norm(&x, &b.attn_norm, rows)?;
            let mut q = self.linear(&b.wq, &h, dim, rows, dim)?;
            let mut k = self.linear(&b.wk, &h, kv_dim, rows, dim)?;
            let v = self.linear(&b.wv, &h, kv_dim, rows, dim)?;
            self.rope(&mut q, &pos, rows, c.n_head)?;
            self.rope(&mut k, &pos, rows, c.n_kv)?;
            let att = self.attention(&q, &k, &v, &seq_start, rows)?;
            let o = self.linear(&b.wo, &att, dim, rows, dim)?;
            self.elementwise(&self.f.add_store, &mut x, &o)?;
            let h = self.rms_norm(&x, &b.ffn_norm, rows)?;
            let mut g = self.linear(&b.gate, &h, b.ffn, rows, dim)?;
            let u = self.linear(&b.up, &h, b.ffn, rows, dim)?;
            self.elementwise(&self.f.silu_mul, &mut g, &u)?;
            let d = self.linear(&b.down, &g, dim, rows, b.ffn)?;
            self.elementwise(&self.f.add_store, &mut x, &d)?;
        }
        let batch = prompts.len();
        let mut ends = self.kernels.alloc::<f32>(batch * dim)?;
        {
            let (n, d) = (int(batch), int(dim));
            let mut launch = self.stream.launch_builder(&self.f.gather_rows);
            launch.arg(&x).arg(&mut ends).arg(&last).arg(&n).arg(&d);
            // SAFETY: `last` holds batch row indexes below rows; ends holds batch·dim values.
            unsafe { launch.launch(grid(batch * dim)) }.map_err(cuda_err)?;
        }
        let h = self.rms_norm(&ends, &self.out_norm, batch)?;
        let logits = self.linear(&self.output, &h, c.vocab, batch, dim)?;
        let flat = self.stream.clone_dtoh(&logits).map_err(cuda_err)?;
        Ok(flat.chunks(c.vocab).map(<[f32]>::to_vec).collect())
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
