//! An image classifier as a plain list of layers with f32 weights, so every backend computes
//! exactly the same network with its own kernels.

use std::collections::HashMap;

use candle_core::{Device, Tensor};

use crate::error::{CollectError, Result};

#[derive(Debug, Clone, PartialEq)]
pub enum Layer {
    /// Stride 1, square kernel, zero padding; weight [out, in, k, k] row-major.
    Conv2d {
        weight: Vec<f32>,
        bias: Vec<f32>,
        out_channels: usize,
        in_channels: usize,
        kernel: usize,
        padding: usize,
    },
    Relu,
    /// 2x2 max pooling, stride 2.
    MaxPool2,
    Flatten,
    /// weight [out, in] row-major.
    Linear {
        weight: Vec<f32>,
        bias: Vec<f32>,
        out_features: usize,
        in_features: usize,
    },
}

/// A convolution's geometry as a GEMM sees it (stride 1, square kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvShape {
    pub in_channels: usize,
    pub kernel: usize,
    pub padding: usize,
}

/// A weight layer as one GEMM: `out[r] = W[r, :] · x + bias[r]` for `rows` outputs over `k`
/// inputs, at every output position when it is a convolution (`x` then an im2col patch).
#[derive(Debug, Clone, Copy)]
pub struct GemmView<'a> {
    pub weight: &'a [f32],
    pub bias: &'a [f32],
    pub rows: usize,
    pub k: usize,
    pub conv: Option<ConvShape>,
}

impl Layer {
    /// The GEMM behind a convolution or linear layer; None for the weightless layers.
    pub fn gemm(&self) -> Option<GemmView<'_>> {
        match self {
            Layer::Conv2d {
                weight,
                bias,
                out_channels,
                in_channels,
                kernel,
                padding,
            } => Some(GemmView {
                weight,
                bias,
                rows: *out_channels,
                k: in_channels * kernel * kernel,
                conv: Some(ConvShape {
                    in_channels: *in_channels,
                    kernel: *kernel,
                    padding: *padding,
                }),
            }),
            Layer::Linear {
                weight,
                bias,
                out_features,
                in_features,
            } => Some(GemmView {
                weight,
                bias,
                rows: *out_features,
                k: *in_features,
                conv: None,
            }),
            Layer::Relu | Layer::MaxPool2 | Layer::Flatten => None,
        }
    }
}

/// Layer shapes without weights: the architecture shared by training and loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerSpec {
    Conv2d {
        name: &'static str,
        in_channels: usize,
        out_channels: usize,
        kernel: usize,
        padding: usize,
    },
    Relu,
    MaxPool2,
    Flatten,
    Linear {
        name: &'static str,
        in_features: usize,
        out_features: usize,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImageModel {
    pub id: String,
    /// [channels, height, width]
    pub input_shape: [usize; 3],
    pub layers: Vec<Layer>,
    pub classes: usize,
    pub weights_sha256: String,
}

/// One step of the forward pass as a backend holds it: a GEMM with its weights and bias in the
/// backend's own storage (`W`, `B`: rounded host values, device buffers), or a weightless layer.
#[derive(Debug, Clone)]
pub enum Step<W, B> {
    Gemm {
        weight: W,
        bias: B,
        rows: usize,
        k: usize,
        /// (kernel, padding) for a convolution.
        conv: Option<(usize, usize)>,
    },
    Relu,
    MaxPool2,
    Flatten,
}

impl ImageModel {
    /// The layers as a backend's steps, each GEMM's weights and bias stored by `store`.
    pub fn steps<W, B>(
        &self,
        mut store: impl FnMut(GemmView<'_>) -> Result<(W, B)>,
    ) -> Result<Vec<Step<W, B>>> {
        self.layers
            .iter()
            .map(|layer| {
                Ok(match (layer.gemm(), layer) {
                    (Some(g), _) => {
                        let (weight, bias) = store(g)?;
                        Step::Gemm {
                            weight,
                            bias,
                            rows: g.rows,
                            k: g.k,
                            conv: g.conv.map(|c| (c.kernel, c.padding)),
                        }
                    }
                    (None, Layer::Relu) => Step::Relu,
                    (None, Layer::MaxPool2) => Step::MaxPool2,
                    (None, _) => Step::Flatten,
                })
            })
            .collect()
    }

    /// Build from safetensors bytes holding `NAME.weight` / `NAME.bias` for each named layer.
    pub fn from_safetensors(
        id: &str,
        input_shape: [usize; 3],
        arch: &[LayerSpec],
        bytes: &[u8],
        source: &std::path::Path,
    ) -> Result<ImageModel> {
        let bad = |reason: String| CollectError::BadWeights {
            model: id.into(),
            path: source.into(),
            reason,
        };
        let tensors = candle_core::safetensors::load_buffer(bytes, &Device::Cpu)
            .map_err(|e| bad(e.to_string()))?;
        let get = |name: &str, shape: &[usize]| -> Result<Vec<f32>> {
            let t = tensors
                .get(name)
                .ok_or_else(|| bad(format!("tensor {name} is missing")))?;
            if t.dims() != shape {
                return Err(bad(format!(
                    "tensor {name} has shape {:?}, expected {shape:?}",
                    t.dims()
                )));
            }
            Ok(t.to_dtype(candle_core::DType::F32)?
                .flatten_all()?
                .to_vec1()?)
        };
        let mut layers = Vec::new();
        let mut classes = 0;
        for spec in arch {
            layers.push(match *spec {
                LayerSpec::Conv2d {
                    name,
                    in_channels,
                    out_channels,
                    kernel,
                    padding,
                } => Layer::Conv2d {
                    weight: get(
                        &format!("{name}.weight"),
                        &[out_channels, in_channels, kernel, kernel],
                    )?,
                    bias: get(&format!("{name}.bias"), &[out_channels])?,
                    out_channels,
                    in_channels,
                    kernel,
                    padding,
                },
                LayerSpec::Linear {
                    name,
                    in_features,
                    out_features,
                } => {
                    classes = out_features;
                    Layer::Linear {
                        weight: get(&format!("{name}.weight"), &[out_features, in_features])?,
                        bias: get(&format!("{name}.bias"), &[out_features])?,
                        out_features,
                        in_features,
                    }
                }
                LayerSpec::Relu => Layer::Relu,
                LayerSpec::MaxPool2 => Layer::MaxPool2,
                LayerSpec::Flatten => Layer::Flatten,
            });
        }
        Ok(ImageModel {
            id: id.into(),
            input_shape,
            layers,
            classes,
            weights_sha256: sha256_hex(bytes),
        })
    }

    pub fn input_len(&self) -> usize {
        self.input_shape.iter().product()
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// Tensors named as in the safetensors file, for saving trained weights.
pub fn named_tensors(arch: &[LayerSpec], layers: &[Layer]) -> Result<HashMap<String, Tensor>> {
    let mut out = HashMap::new();
    for (spec, layer) in arch.iter().zip(layers) {
        match (spec, layer) {
            (
                LayerSpec::Conv2d { name, .. },
                Layer::Conv2d {
                    weight,
                    bias,
                    out_channels,
                    in_channels,
                    kernel,
                    ..
                },
            ) => {
                let shape = (*out_channels, *in_channels, *kernel, *kernel);
                out.insert(
                    format!("{name}.weight"),
                    Tensor::from_vec(weight.clone(), shape, &Device::Cpu)?,
                );
                out.insert(
                    format!("{name}.bias"),
                    Tensor::new(bias.as_slice(), &Device::Cpu)?,
                );
            }
            (
                LayerSpec::Linear { name, .. },
                Layer::Linear {
                    weight,
                    bias,
                    out_features,
                    in_features,
                },
            ) => {
                let shape = (*out_features, *in_features);
                out.insert(
                    format!("{name}.weight"),
                    Tensor::from_vec(weight.clone(), shape, &Device::Cpu)?,
                );
                out.insert(
                    format!("{name}.bias"),
                    Tensor::new(bias.as_slice(), &Device::Cpu)?,
                );
            }
            _ => {}
        }
    }
    Ok(out)
}
