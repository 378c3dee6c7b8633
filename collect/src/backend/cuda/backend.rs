//! The CUDA backend's registry entry: NVIDIA GPUs through cuBLAS and NVRTC.

use hspi_datasets::{GpuInfo, Hardware, Platform};

use super::{check, cuda_devices, cuda_platforms, libraries, CudaImage, CudaLm};
use crate::backend::{not_a_language_model, Backend, ImageRunner, Runner};
use crate::error::{CollectError, Result};
use crate::zoo::{ImageModel, Model, ModelId};

/// Every NVIDIA GPU this machine exposes.
pub struct Cuda;

const TINY_LM: &str =
    "the GPU backend runs image models and decoder language models of the dense families (a GGUF file or a checkpoint), not tiny-lm";

impl Backend for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn owns(&self, platform: &Platform) -> bool {
        matches!(platform.hardware, Hardware::Cuda { .. })
    }

    fn platforms(&self, model: ModelId) -> Result<Vec<Platform>> {
        if model == ModelId::TinyLm {
            return Err(CollectError::NotRunHere {
                backend: self.name(),
                model: model.name().into(),
                reason: TINY_LM.into(),
            });
        }
        libraries()?;
        let platforms = cuda_platforms();
        if platforms.is_empty() {
            return Err(CollectError::Cuda("the driver reports no GPU".into()));
        }
        Ok(platforms)
    }

    /// Every precision × batch size on every GPU is a group to ask for, not a default: a GPU
    /// collection is a choice.
    fn in_default_grid(&self) -> bool {
        false
    }

    /// A GPU backend compiles kernels and uploads weights: checked without building one.
    fn check(&self, model: &Model, platform: &Platform) -> Result<()> {
        let id = model.info().id;
        if matches!(model, Model::Tiny(_)) {
            return Err(CollectError::Unsupported {
                platform: platform.to_string(),
                model: id,
                reason: TINY_LM.into(),
            });
        }
        check(platform, &id)
    }

    fn image_runner(
        &self,
        model: &ImageModel,
        platform: &Platform,
    ) -> Result<Box<dyn ImageRunner>> {
        Ok(Box::new(CudaImage::new(platform, model)?))
    }

    fn lm_runner(&self, model: &Model, platform: &Platform) -> Result<Box<dyn Runner>> {
        match model {
            Model::Lm { path, .. } => Ok(Box::new(CudaLm::load(path, platform)?)),
            Model::Tiny(_) => Err(CollectError::Unsupported {
                platform: platform.to_string(),
                model: model.info().id,
                reason: TINY_LM.into(),
            }),
            Model::Image(_) => Err(not_a_language_model(platform)),
        }
    }

    /// One GPU computes one batch at a time.
    fn parallel_images(&self) -> bool {
        false
    }

    fn gpus(&self) -> Vec<GpuInfo> {
        cuda_devices()
    }
}
