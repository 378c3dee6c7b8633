//! The differentiable stand-in for one platform in the border search: the model's f32 candle graph
//! with the platform's quantised weights, its rounding of GEMM inputs and of stored outputs applied
//! in the forward pass only. The backward pass treats each rounding as the identity (the
//! straight-through estimator), since rounding has no useful gradient of its own.
//!
//! Accumulation order and FMA are not modelled: platforms that differ only there share a surrogate,
//! and the search's second phase, on the real platforms, separates them.

use candle_core::{DType, Device, Tensor, Var};
use hspi_datasets::{NumericFormat, Platform};

use hspi_collect::backend::emulated::dequantised_layer;
use hspi_collect::backend::CandleLayer;
use hspi_collect::rounding::{
    qdq_fp8, qdq_mxint8, quantize_symmetric, round_bf16, round_f16, round_tf32,
};
use hspi_collect::zoo::ImageModel;
use hspi_collect::Result;

pub struct Surrogate {
    /// Each layer, and whether it is a GEMM (convolution or linear) whose input and output round.
    layers: Vec<(CandleLayer, bool)>,
    format: NumericFormat,
    shape: [usize; 3],
}

impl Surrogate {
    pub fn new(platform: &Platform, model: &ImageModel) -> Result<Surrogate> {
        let format = match platform.format {
            // GGUF block formats have no image-model backend; the f32 graph stands in.
            NumericFormat::Gguf(_) => NumericFormat::F32,
            f => f,
        };
        let layers = model
            .layers
            .iter()
            .map(|l| {
                let layer = CandleLayer::from_layer(
                    &dequantised_layer(l, format),
                    DType::F32,
                    &Device::Cpu,
                )?;
                Ok((layer, l.gemm().is_some()))
            })
            .collect::<candle_core::Result<_>>()?;
        Ok(Surrogate {
            layers,
            format,
            shape: model.input_shape,
        })
    }

    /// A flattened [C,H,W] input as a variable to differentiate against.
    pub fn input(&self, x: &[f32]) -> Result<Var> {
        let [c, h, w] = self.shape;
        Ok(Var::from_tensor(&Tensor::from_slice(
            x,
            (1, c, h, w),
            &Device::Cpu,
        )?)?)
    }

    /// Logits, shape [classes], differentiable in `x` (a [1, C, H, W] tensor).
    pub fn logits(&self, x: &Tensor) -> Result<Tensor> {
        let mut x = x.clone();
        for (layer, gemm) in &self.layers {
            if *gemm {
                x = straight_through(&x, |v| round_operand(self.format, v))?;
                x = candle_core::Module::forward(layer, &x)?;
                x = straight_through(&x, |v| round_stored(self.format, v))?;
            } else {
                x = candle_core::Module::forward(layer, &x)?;
            }
        }
        Ok(x.squeeze(0)?)
    }
}

/// `round` in the forward pass, the identity in the backward pass: x + (round(x) − x), the
/// difference detached from the graph. The difference of a value and its rounding is exact in f32,
/// so the forward value is the rounded one.
fn straight_through(x: &Tensor, round: impl Fn(&mut [f32])) -> candle_core::Result<Tensor> {
    let mut v = x.flatten_all()?.to_vec1::<f32>()?;
    round(&mut v);
    let rounded = Tensor::from_vec(v, x.shape(), x.device())?;
    x + (rounded - x)?.detach()
}

/// What the platform does to a GEMM input (weights were quantised once). mxint8 blocks run along
/// the reduction in the real kernels; here they run along the flattened tensor, an approximation.
fn round_operand(format: NumericFormat, xs: &mut [f32]) {
    match format {
        NumericFormat::Tf32 => xs.iter_mut().for_each(|v| *v = round_tf32(*v)),
        NumericFormat::F16 => xs.iter_mut().for_each(|v| *v = round_f16(*v)),
        NumericFormat::Bf16 => xs.iter_mut().for_each(|v| *v = round_bf16(*v)),
        NumericFormat::Fp8E4m3 => qdq_fp8(xs, true),
        NumericFormat::Fp8E5m2 => qdq_fp8(xs, false),
        NumericFormat::Int8 => {
            let (q, scale) = quantize_symmetric(xs, 127, -127);
            xs.iter_mut()
                .zip(q)
                .for_each(|(v, q)| *v = q as f32 * scale);
        }
        NumericFormat::MxInt8 => xs.chunks_mut(32).for_each(qdq_mxint8),
        _ => {}
    }
}

/// Rounding of values stored between layers.
fn round_stored(format: NumericFormat, xs: &mut [f32]) {
    match format {
        NumericFormat::F16 => xs.iter_mut().for_each(|v| *v = round_f16(*v)),
        NumericFormat::Bf16 => xs.iter_mut().for_each(|v| *v = round_bf16(*v)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hspi_collect::backend::image_runner;
    use hspi_collect::zoo::cnn_digits;

    fn platform(s: &str) -> Platform {
        format!("cpu-{}/{s}", hspi_datasets::provenance::isa_path())
            .parse()
            .unwrap()
    }

    #[test]
    fn the_forward_pass_matches_the_platform_and_gradients_pass_through_rounding() {
        let model = cnn_digits::embedded();
        let x: Vec<f32> = (0..64).map(|i| ((i * 37) % 256) as f32 / 255.0).collect();
        for p in [
            "emu/f32/acc-f32.seq.sk1.fma/bs1",
            "emu/int8/acc-f32.seq.sk1.fma/bs1",
            "emu/fp8-e4m3/acc-f32.seq.sk1.fma/bs1",
        ] {
            let platform = platform(p);
            let surrogate = Surrogate::new(&platform, &model).unwrap();
            let var = surrogate.input(&x).unwrap();
            let z = surrogate.logits(var.as_tensor()).unwrap();
            let real = image_runner(&platform, &model)
                .unwrap()
                .forward(&[&x])
                .unwrap();
            let z: Vec<f32> = z.to_vec1().unwrap();
            // The same quantised network; only the accumulation differs.
            for (s, r) in z.iter().zip(&real[0]) {
                assert!((s - r).abs() < 1e-3 * r.abs().max(1.0), "{p}: {s} vs {r}");
            }
            let top = z
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .unwrap()
                .0;
            let logit = surrogate.logits(var.as_tensor()).unwrap().get(top).unwrap();
            let grads = logit.backward().unwrap();
            let g: Vec<f32> = grads
                .get(var.as_tensor())
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            assert!(
                g.iter().any(|v| *v != 0.0),
                "{p}: no gradient through the rounding"
            );
        }
    }
}
