//! candle on the CPU at f32, f16 or bf16: candle's own kernels (gemm crate, im2col convolution).

use candle_core::{DType, Device, Tensor};
use hspi_datasets::{NumericFormat, Platform};

use super::ImageBackend;
use crate::error::{CollectError, Result};
use crate::zoo::{forward_layers, CandleLayer, ImageModel};

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
