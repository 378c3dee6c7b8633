//! The CUDA backend. Without the `cuda` feature this is the stand-in that reports why it cannot run,
//! so callers need no `cfg`.

use hspi_datasets::{GpuInfo, Platform};

use super::ImageBackend;
use crate::error::{CollectError, Result};
use crate::zoo::ImageModel;

pub struct CudaImage {
    platform: Platform,
}

impl CudaImage {
    pub fn new(_platform: &Platform, _model: &ImageModel) -> Result<CudaImage> {
        // Until the cuBLAS backend lands (feature `cuda`), no build can run a CUDA platform.
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

/// The GPUs this build can use: none without the `cuda` feature and a driver.
pub fn cuda_devices() -> Vec<GpuInfo> {
    Vec::new()
}
