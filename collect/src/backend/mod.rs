//! Backends compute a zoo model at one platform. One backend per file; `image_backend` is the one
//! place that maps a platform to its backend.

mod candle_cpu;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
mod cuda;
pub mod emulated;

pub use candle_cpu::{forward_layers, CandleCpu, CandleLayer};
pub use cuda::{cuda_devices, cuda_platforms, CudaImage};
pub use emulated::Emulated;

use hspi_datasets::{EngineKind, Hardware, Platform};

use crate::error::{CollectError, Result};
use crate::zoo::ImageModel;

/// Runs an image classifier: a batch of flattened [C,H,W] inputs in, one logit vector per input out.
pub trait ImageBackend: Send {
    fn platform(&self) -> &Platform;
    fn forward(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>>;
}

/// Build the backend that computes `model` at `platform`.
pub fn image_backend(platform: &Platform, model: &ImageModel) -> Result<Box<dyn ImageBackend>> {
    let unsupported = |reason: &str| CollectError::Unsupported {
        platform: platform.to_string(),
        model: model.id.clone(),
        reason: reason.into(),
    };
    match (&platform.hardware, platform.engine.kind) {
        (Hardware::Cpu { isa }, kind) if isa != hspi_datasets::provenance::isa_path() => {
            let _ = kind;
            Err(unsupported(&format!(
                "this machine's CPU path is {}, not {isa}",
                hspi_datasets::provenance::isa_path()
            )))
        }
        (Hardware::Cpu { .. }, EngineKind::Candle) => {
            Ok(Box::new(CandleCpu::new(platform, model)?))
        }
        (Hardware::Cpu { .. }, EngineKind::Emulated) => {
            Ok(Box::new(Emulated::new(platform, model)?))
        }
        (Hardware::Cuda { .. }, _) => Ok(Box::new(CudaImage::new(platform, model)?)),
        _ => Err(unsupported(
            "no local backend runs this engine on this hardware",
        )),
    }
}
