//! An image model's layers as candle modules: inference on candle's CPU kernels, and training
//! (the zoo trains its own models through them).

use candle_core::{DType, Device, Module, Tensor};

use super::Layer;

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
