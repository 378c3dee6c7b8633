//! The CUDA backend's stand-in for builds without the `cuda` feature: it owns GPU platforms and
//! says why it cannot run them, so callers need no `cfg`.

use hspi_datasets::{Hardware, NumericFormat, Platform};

use super::{AllPositions, Backend, ImageRunner, Runner};
use crate::error::{CollectError, Result};
use crate::zoo::{ImageModel, Model, ModelId};

/// NVIDIA GPUs: none usable without the `cuda` feature.
pub struct Cuda;

impl Backend for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn owns(&self, platform: &Platform) -> bool {
        matches!(platform.hardware, Hardware::Cuda { .. })
    }

    fn platforms(&self, _model: ModelId) -> Result<Vec<Platform>> {
        Err(CollectError::NoCudaDriver)
    }

    fn in_default_grid(&self) -> bool {
        false
    }

    fn check(&self, _model: &Model, _platform: &Platform) -> Result<()> {
        Err(CollectError::NoCudaDriver)
    }

    fn image_runner(&self, _: &ImageModel, _: &Platform) -> Result<Box<dyn ImageRunner>> {
        Err(CollectError::NoCudaDriver)
    }

    fn lm_runner(&self, _model: &Model, _platform: &Platform) -> Result<Box<dyn Runner>> {
        Err(CollectError::NoCudaDriver)
    }

    fn parallel_images(&self) -> bool {
        false
    }
}

/// hspi's GPU pass as a teacher-forcing engine: none without the `cuda` feature.
pub fn gpu_all_positions(
    _weights: &std::path::Path,
    _format: NumericFormat,
) -> Result<Box<dyn AllPositions>> {
    Err(CollectError::NoCudaDriver)
}
