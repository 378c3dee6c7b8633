//! Emulated GPU kernels on the CPU: the model's layers computed with a configurable GEMM
//! (accumulator, reduction order, split-K, FMA) and quantise→dequantise to each numeric format.
//! Scalar and deterministic: the same platform gives the same bits on every CPU.
//!
//! `emu` platforms run this module's own pipeline; `emu-sm80`/`emu-sm90` platforms run hspi's
//! CUDA pipeline with a tensor-core rule (`gpu`, `tensor_core`), and kernel plans
//! (`plan`, fitted by `fit`) reproduce a GPU platform's records.

pub mod fit;
mod gemm;
pub mod gpu;
mod gpu_dot;
mod grid;
pub mod plan;
pub mod tensor_core;

pub use gemm::Gemm;
pub use gpu::{GpuImage, GpuModel, KernelSource};
pub use gpu_dot::GpuDot;
pub use grid::Emulated;
pub use plan::{FitFigures, GemmShape, KernelPlan, KernelPlans, PlanFile, PlannedGemm};
pub use tensor_core::{Arch, BlockFma};

use hspi_datasets::{KernelOptions, NumericFormat, Platform, ReductionOrder};

use super::ImageRunner;
use crate::error::{CollectError, Result};
use crate::rounding::*;
use crate::zoo::{ConvShape, GemmView, ImageModel, Layer};

/// A GEMM operand prepared for one format: dequantised floats, or integers with scales (int8).
#[derive(Debug, Clone)]
enum Weights {
    Float(Vec<f32>),
    /// Per-output-channel scales.
    Int8 {
        q: Vec<i32>,
        scales: Vec<f32>,
    },
}

#[derive(Debug, Clone)]
enum Prepared {
    Gemm {
        weights: Weights,
        bias: Vec<f32>,
        rows: usize,
        k: usize,
        conv: Option<ConvShape>,
    },
    Relu,
    MaxPool2,
    Flatten,
}

pub struct EmulatedImage {
    platform: Platform,
    format: NumericFormat,
    gemm: Gemm,
    input_shape: [usize; 3],
    layers: Vec<Prepared>,
}

/// The formats the emulated kernels compute (quantised per GEMM as `prepare` does).
fn emulated_format(format: NumericFormat) -> bool {
    matches!(
        format,
        NumericFormat::F32
            | NumericFormat::Tf32
            | NumericFormat::Bf16
            | NumericFormat::F16
            | NumericFormat::Fp8E4m3
            | NumericFormat::Fp8E5m2
            | NumericFormat::Int8
            | NumericFormat::Int4 { .. }
            | NumericFormat::MxInt8
    )
}

impl EmulatedImage {
    pub fn new(platform: &Platform, model: &ImageModel) -> Result<EmulatedImage> {
        let format = platform.format;
        if matches!(format, NumericFormat::Gguf(_)) {
            return Err(CollectError::Unsupported {
                platform: platform.to_string(),
                model: model.id.clone(),
                reason: "GGUF block formats run on candle or llama.cpp, not the emulated kernels"
                    .into(),
            });
        }
        if !emulated_format(format) {
            return Err(CollectError::Unsupported {
                platform: platform.to_string(),
                model: model.id.clone(),
                reason: format!(
                    "{format} is a serving engine's scheme for language models (candle runs it \
                     for SmolLM2); the emulated kernels compute f32, tf32, bf16, f16, fp8-e4m3, \
                     fp8-e5m2, int8, int4-gN and mxint8"
                ),
            });
        }
        let kernel = platform.kernel.unwrap_or_default();
        if matches!(kernel.order, ReductionOrder::TensorCore { .. }) {
            return Err(CollectError::Unsupported {
                platform: platform.to_string(),
                model: model.id.clone(),
                reason: "tensor-core orders follow a GPU generation's rule: name it in the \
                         engine (emu-sm80, emu-sm90)"
                    .into(),
            });
        }
        if kernel.order == ReductionOrder::Library {
            return Err(CollectError::Unsupported {
                platform: platform.to_string(),
                model: model.id.clone(),
                reason: "the emulated kernels need an explicit reduction order \
                         (acc-f32.seq.sk1.fma, …); acc-X alone leaves it to a GPU library"
                    .into(),
            });
        }
        let layers = model.layers.iter().map(|l| prepare(l, format)).collect();
        Ok(EmulatedImage {
            platform: platform.clone(),
            format,
            gemm: Gemm { kernel },
            input_shape: model.input_shape,
            layers,
        })
    }

    pub fn kernel(&self) -> KernelOptions {
        self.gemm.kernel
    }

    /// Rounding of values stored between layers.
    fn store(&self, x: f32) -> f32 {
        match self.format {
            NumericFormat::F16 => round_f16(x),
            NumericFormat::Bf16 => round_bf16(x),
            _ => x,
        }
    }

    /// Rounding of a GEMM input (activations; weights were prepared once). mxint8 blocks run along
    /// the reduction, so `gemm_layer` quantises those row by row instead.
    fn operand(&self, xs: &mut [f32]) {
        match self.format {
            NumericFormat::Tf32 => xs.iter_mut().for_each(|v| *v = round_tf32(*v)),
            NumericFormat::F16 => xs.iter_mut().for_each(|v| *v = round_f16(*v)),
            NumericFormat::Bf16 => xs.iter_mut().for_each(|v| *v = round_bf16(*v)),
            NumericFormat::Fp8E4m3 => qdq_fp8(xs, true),
            NumericFormat::Fp8E5m2 => qdq_fp8(xs, false),
            _ => {}
        }
    }

    /// out[r, p] = W[r, :] · X[p, :] + bias[r] for `positions` rows of X (each of length k).
    fn gemm_layer(
        &self,
        weights: &Weights,
        bias: &[f32],
        rows: usize,
        k: usize,
        x: &mut [f32],
    ) -> Vec<f32> {
        let positions = x.len() / k;
        match self.format {
            NumericFormat::MxInt8 => x.chunks_mut(k).for_each(qdq_mxint8),
            _ => self.operand(x),
        }
        let mut out = vec![0f32; rows * positions];
        match weights {
            Weights::Float(w) => {
                for r in 0..rows {
                    let wr = &w[r * k..(r + 1) * k];
                    for p in 0..positions {
                        let acc = self.gemm.dot(wr, &x[p * k..(p + 1) * k]);
                        out[r * positions + p] = self.store(acc + bias[r]);
                    }
                }
            }
            Weights::Int8 { q, scales } => {
                // Integer products summed exactly (int32 accumulators): order cannot matter.
                let (xq, xs) = quantize_symmetric(x, 127, -127);
                for r in 0..rows {
                    let wr = &q[r * k..(r + 1) * k];
                    for p in 0..positions {
                        let acc: i64 = wr
                            .iter()
                            .zip(&xq[p * k..(p + 1) * k])
                            .map(|(a, b)| (*a as i64) * (*b as i64))
                            .sum();
                        let y = (acc as f32) * (xs * scales[r]);
                        out[r * positions + p] = y + bias[r];
                    }
                }
            }
        }
        out
    }

    fn forward_one(&self, input: &[f32]) -> Vec<f32> {
        let [mut c, mut h, mut w] = self.input_shape;
        let mut x: Vec<f32> = input.iter().map(|v| self.store(*v)).collect();
        for layer in &self.layers {
            match layer {
                Prepared::Gemm {
                    weights,
                    bias,
                    rows,
                    k,
                    conv: Some(shape),
                } => {
                    debug_assert_eq!(c, shape.in_channels);
                    let mut cols = im2col(&x, [c, h, w], shape.kernel, shape.padding);
                    x = self.gemm_layer(weights, bias, *rows, *k, &mut cols);
                    c = *rows;
                    h = h + 2 * shape.padding + 1 - shape.kernel;
                    w = w + 2 * shape.padding + 1 - shape.kernel;
                }
                Prepared::Gemm {
                    weights,
                    bias,
                    rows,
                    k,
                    conv: None,
                } => {
                    x = self.gemm_layer(weights, bias, *rows, *k, &mut x.clone());
                }
                Prepared::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
                Prepared::MaxPool2 => {
                    x = max_pool2(&x, [c, h, w]);
                    h /= 2;
                    w /= 2;
                }
                Prepared::Flatten => {}
            }
        }
        x
    }
}

/// The layer as `format` computes it, with plain float weights: quantised and dequantised (int8:
/// each integer times its row's scale). Used for differentiable stand-ins of a platform.
pub fn dequantised_layer(layer: &Layer, format: NumericFormat) -> Layer {
    let mut out = layer.clone();
    let (weight, bias) = match &mut out {
        Layer::Conv2d { weight, bias, .. } | Layer::Linear { weight, bias, .. } => (weight, bias),
        _ => return out,
    };
    if let Prepared::Gemm {
        weights,
        bias: b,
        k,
        ..
    } = prepare(layer, format)
    {
        *weight = match weights {
            Weights::Float(w) => w,
            Weights::Int8 { q, scales } => q
                .chunks(k)
                .zip(scales)
                .flat_map(|(row, s)| row.iter().map(move |q| *q as f32 * s))
                .collect(),
        };
        *bias = b;
    }
    out
}

fn prepare(layer: &Layer, format: NumericFormat) -> Prepared {
    let Some(GemmView {
        weight,
        bias,
        rows,
        k,
        conv,
    }) = layer.gemm()
    else {
        return match layer {
            Layer::Relu => Prepared::Relu,
            Layer::MaxPool2 => Prepared::MaxPool2,
            _ => Prepared::Flatten,
        };
    };
    let mut w = weight.to_vec();
    let mut b = bias.to_vec();
    let weights = match format {
        NumericFormat::Int8 => {
            let (mut q, mut scales) = (Vec::new(), Vec::new());
            for row in w.chunks(k) {
                let (qr, s) = quantize_symmetric(row, 127, -127);
                q.extend(qr);
                scales.push(s);
            }
            Weights::Int8 { q, scales }
        }
        NumericFormat::Int4 { group } => {
            w.chunks_mut(k)
                .for_each(|row| qdq_int4_groups(row, group as usize));
            Weights::Float(w)
        }
        NumericFormat::MxInt8 => {
            w.chunks_mut(k).for_each(qdq_mxint8);
            Weights::Float(w)
        }
        NumericFormat::Fp8E4m3 | NumericFormat::Fp8E5m2 => {
            qdq_fp8(&mut w, format == NumericFormat::Fp8E4m3);
            Weights::Float(w)
        }
        NumericFormat::Tf32 => Weights::Float(w.into_iter().map(round_tf32).collect()),
        NumericFormat::F16 => {
            b.iter_mut().for_each(|v| *v = round_f16(*v));
            Weights::Float(w.into_iter().map(round_f16).collect())
        }
        NumericFormat::Bf16 => {
            b.iter_mut().for_each(|v| *v = round_bf16(*v));
            Weights::Float(w.into_iter().map(round_bf16).collect())
        }
        _ => Weights::Float(w),
    };
    Prepared::Gemm {
        weights,
        bias: b,
        rows,
        k,
        conv,
    }
}

/// [C,H,W] → [H'·W', C·k·k] patches (stride 1, zero padding), the layout of an implicit GEMM.
pub(crate) fn im2col(x: &[f32], [c, h, w]: [usize; 3], k: usize, pad: usize) -> Vec<f32> {
    let (oh, ow) = (h + 2 * pad + 1 - k, w + 2 * pad + 1 - k);
    let mut cols = Vec::with_capacity(oh * ow * c * k * k);
    for oy in 0..oh {
        for ox in 0..ow {
            for ch in 0..c {
                for ky in 0..k {
                    for kx in 0..k {
                        let (y, xx) = (
                            (oy + ky) as isize - pad as isize,
                            (ox + kx) as isize - pad as isize,
                        );
                        let inside = y >= 0 && xx >= 0 && (y as usize) < h && (xx as usize) < w;
                        cols.push(if inside {
                            x[ch * h * w + y as usize * w + xx as usize]
                        } else {
                            0.0
                        });
                    }
                }
            }
        }
    }
    cols
}

pub(crate) fn max_pool2(x: &[f32], [c, h, w]: [usize; 3]) -> Vec<f32> {
    let (oh, ow) = (h / 2, w / 2);
    let mut out = Vec::with_capacity(c * oh * ow);
    for ch in 0..c {
        for y in 0..oh {
            for xx in 0..ow {
                let at = |dy: usize, dx: usize| x[ch * h * w + (2 * y + dy) * w + 2 * xx + dx];
                out.push(at(0, 0).max(at(0, 1)).max(at(1, 0)).max(at(1, 1)));
            }
        }
    }
    out
}

/// An image runner that reproduces the GPU platform of `plan` on this CPU.
pub fn plan_runner(plan: &KernelPlan, model: &ImageModel) -> Result<Box<dyn ImageRunner>> {
    if plan.model != model.id {
        return Err(CollectError::Unsupported {
            platform: plan.platform.to_string(),
            model: model.id.clone(),
            reason: format!("its kernel plan was fitted to {}", plan.model),
        });
    }
    Ok(Box::new(GpuImage::new(
        &plan.platform,
        plan.arch()?,
        model,
        KernelSource::Plan(Box::new(plan.clone())),
    )?))
}

impl ImageRunner for EmulatedImage {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    fn forward(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>> {
        Ok(inputs.iter().map(|x| self.forward_one(x)).collect())
    }
}
