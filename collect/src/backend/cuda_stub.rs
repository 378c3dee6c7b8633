//! The CUDA backend's stand-in for builds without the `cuda` feature: it reports why it cannot
//! run, so callers need no `cfg`.

use std::path::Path;

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

/// Language models on the GPU: unavailable without the `cuda` feature.
pub struct CudaLm {
    platform: Platform,
}

impl CudaLm {
    pub fn load(_path: &Path, _platform: &Platform) -> Result<CudaLm> {
        Err(CollectError::NoCudaDriver)
    }
    pub fn platform(&self) -> &Platform {
        &self.platform
    }
    pub fn next_token_logits(&self, _prompts: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        Err(CollectError::NoCudaDriver)
    }
}

/// Why this build cannot run CUDA platforms.
pub fn unavailable_reason() -> Option<String> {
    Some(CollectError::NoCudaDriver.to_string())
}

/// Whether this machine can run a CUDA platform: not with this build.
pub fn check(_platform: &Platform, _model: &str) -> Result<()> {
    Err(CollectError::NoCudaDriver)
}
