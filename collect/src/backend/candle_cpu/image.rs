//! candle on the CPU at f32, f16 or bf16: candle's own kernels (gemm crate, im2col convolution).

use candle_core::{DType, Device, Tensor};
use hspi_datasets::Platform;

use crate::backend::ImageRunner;
use crate::error::{CollectError, Result};
use crate::zoo::{forward_layers, CandleLayer, ImageModel};

pub struct CandleImage {
    platform: Platform,
    dtype: DType,
    input_shape: [usize; 3],
    layers: Vec<CandleLayer>,
}

impl CandleImage {
    pub fn new(platform: &Platform, model: &ImageModel) -> Result<CandleImage> {
        let dtype = super::dtype(platform.format).ok_or_else(|| CollectError::Unsupported {
            platform: platform.to_string(),
            model: model.id.clone(),
            reason: format!(
                "candle on the CPU computes f32, f16 or bf16, not {}",
                platform.format
            ),
        })?;
        let layers = model
            .layers
            .iter()
            .map(|l| CandleLayer::from_layer(l, dtype, &Device::Cpu))
            .collect::<candle_core::Result<_>>()?;
        Ok(CandleImage {
            platform: platform.clone(),
            dtype,
            input_shape: model.input_shape,
            layers,
        })
    }
}

impl ImageRunner for CandleImage {
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
