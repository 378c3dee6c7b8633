//! The CUDA backend's stand-in for builds without the `cuda` feature: it reports why it cannot
//! run, so callers need no `cfg`.

use hspi_datasets::{GpuInfo, Platform};

use super::ImageBackend;
use crate::error::{CollectError, Result};
use crate::zoo::ImageModel;

pub struct CudaImage {
    platform: Platform,
}

impl CudaImage {
    pub fn new(_platform: &Platform, _model: &ImageModel) -> Result<CudaImage> {
        Err(CollectError::NoCudaDriver)
    }
}

impl ImageBackend for CudaImage {
    fn platform(&self) -> &Platform {
        &self.platform
    }
    fn forward(&self, _inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>> {
        Err(CollectError::NoCudaDriver)
    }
}

/// The GPUs this build can use: none without the `cuda` feature.
pub fn cuda_devices() -> Vec<GpuInfo> {
    Vec::new()
}

/// CUDA platforms this build can run: none without the `cuda` feature.
pub fn cuda_platforms() -> Vec<Platform> {
    Vec::new()
}
