//! candle on the CPU at f32, f16 or bf16: candle's own kernels (gemm crate, im2col convolution).

use candle_core::{DType, Device, Module, Tensor};
use hspi_datasets::{NumericFormat, Platform};

use super::ImageBackend;
use crate::error::{CollectError, Result};
use crate::zoo::{ImageModel, Layer};

/// A layer with its weights as candle tensors (plain tensors for inference, `Var`s for training).
#[derive(Debug, Clone)]
pub enum CandleLayer {
    Conv2d {
        weight: Tensor,
        bias: Tensor,
        padding: usize,
    },
    Relu,
    MaxPool2,
    Flatten,
    Linear {
        weight: Tensor,
        bias: Tensor,
    },
}

impl CandleLayer {
    pub fn from_layer(layer: &Layer, dtype: DType, device: &Device) -> candle_core::Result<Self> {
        let Some(g) = layer.gemm() else {
            return Ok(match layer {
                Layer::Relu => CandleLayer::Relu,
                Layer::MaxPool2 => CandleLayer::MaxPool2,
                _ => CandleLayer::Flatten,
            });
        };
        let bias = Tensor::from_slice(g.bias, g.rows, device)?.to_dtype(dtype)?;
        Ok(match g.conv {
            Some(c) => CandleLayer::Conv2d {
                weight: Tensor::from_slice(
                    g.weight,
                    (g.rows, c.in_channels, c.kernel, c.kernel),
                    device,
                )?
                .to_dtype(dtype)?,
                bias,
                padding: c.padding,
            },
            None => CandleLayer::Linear {
                weight: Tensor::from_slice(g.weight, (g.rows, g.k), device)?.to_dtype(dtype)?,
                bias,
            },
        })
    }
}

impl Module for CandleLayer {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            CandleLayer::Conv2d {
                weight,
                bias,
                padding,
            } => {
                let y = if x.dtype() == DType::BF16 {
                    conv2d_unfolded(x, weight, *padding)?
                } else {
                    x.conv2d(weight, *padding, 1, 1, 1)?
                };
                y.broadcast_add(&bias.reshape((1, bias.dim(0)?, 1, 1))?)
            }
            CandleLayer::Relu => x.relu(),
            CandleLayer::MaxPool2 => x.max_pool2d(2),
            CandleLayer::Flatten => x.flatten_from(1),
            CandleLayer::Linear { weight, bias } => x.matmul(&weight.t()?)?.broadcast_add(bias),
        }
    }
}

/// candle's CPU conv2d has no bf16 kernel; its bf16 matmul does exist (widened to f32 and narrowed
/// back), so bf16 convolutions run as candle tensor ops: unfold the patches, then one matmul.
fn conv2d_unfolded(x: &Tensor, weight: &Tensor, padding: usize) -> candle_core::Result<Tensor> {
    let (n, c, h, w) = x.dims4()?;
    let (o, _, k, _) = weight.dims4()?;
    let (oh, ow) = (h + 2 * padding + 1 - k, w + 2 * padding + 1 - k);
    let xp = x
        .pad_with_zeros(2, padding, padding)?
        .pad_with_zeros(3, padding, padding)?;
    let mut patches = Vec::with_capacity(k * k);
    for ky in 0..k {
        for kx in 0..k {
            patches.push(xp.narrow(2, ky, oh)?.narrow(3, kx, ow)?);
        }
    }
    let cols = Tensor::stack(&patches, 2)?.reshape((n, c * k * k, oh * ow))?;
    let w2 = weight
        .reshape((o, c * k * k))?
        .broadcast_left(n)?
        .contiguous()?;
    w2.matmul(&cols.contiguous()?)?.reshape((n, o, oh, ow))
}

/// Run the layers on a batch `x` of shape [N, C, H, W].
pub fn forward_layers(layers: &[CandleLayer], x: &Tensor) -> candle_core::Result<Tensor> {
    layers.iter().try_fold(x.clone(), |x, l| l.forward(&x))
}

pub struct CandleCpu {
    platform: Platform,
    dtype: DType,
    input_shape: [usize; 3],
    layers: Vec<CandleLayer>,
}

impl CandleCpu {
    pub fn new(platform: &Platform, model: &ImageModel) -> Result<CandleCpu> {
        let dtype = match platform.format {
            NumericFormat::F32 => DType::F32,
            NumericFormat::F16 => DType::F16,
            NumericFormat::Bf16 => DType::BF16,
            other => {
                return Err(CollectError::Unsupported {
                    platform: platform.to_string(),
                    model: model.id.clone(),
                    reason: format!("candle on the CPU computes f32, f16 or bf16, not {other}"),
                })
            }
        };
        let layers = model
            .layers
            .iter()
            .map(|l| CandleLayer::from_layer(l, dtype, &Device::Cpu))
            .collect::<candle_core::Result<_>>()?;
        Ok(CandleCpu {
            platform: platform.clone(),
            dtype,
            input_shape: model.input_shape,
            layers,
        })
    }
}

impl ImageBackend for CandleCpu {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    fn forward(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>> {
        let [c, h, w] = self.input_shape;
        let flat: Vec<f32> = inputs.iter().flat_map(|x| x.iter().copied()).collect();
        let x =
            Tensor::from_vec(flat, (inputs.len(), c, h, w), &Device::Cpu)?.to_dtype(self.dtype)?;
        let y = forward_layers(&self.layers, &x)?.to_dtype(DType::F32)?;
        Ok(y.to_vec2()?)
    }
}
