//! Backends compute a zoo model at one platform. One backend per file; `image_backend` is the one
//! place that maps a platform to its backend.

mod candle_cpu;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
mod cuda;
pub mod emulated;

pub use crate::zoo::{forward_layers, CandleLayer};
pub use candle_cpu::CandleCpu;
pub use cuda::{
    check as cuda_check, cuda_devices, cuda_platforms, unavailable_reason as cuda_unavailable,
    CudaImage, CudaLm,
};
pub use emulated::Emulated;

use hspi_datasets::{EngineKind, Hardware, Platform};

use crate::error::{CollectError, Result};
use crate::zoo::ImageModel;

/// Runs an image classifier: a batch of flattened [C,H,W] inputs in, one logit vector per input out.
pub trait ImageBackend: Send {
    fn platform(&self) -> &Platform;
    fn forward(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>>;
}

/// Small image models run one input per call; candle's CPU kernels split even those across every
/// core, which costs more in wake-ups than it gains: `hspi collect` of 10 000 CNN probes at candle
/// f32 takes 2.0 s with candle's default threads and 0.5 s with one, bit for bit the same records
/// (checked on the 26-platform grid), and the border search 0.36 s per pair against 0.21 s.
/// Honours a `RAYON_NUM_THREADS` the user set. It sets the environment, so call it before any
/// other thread starts.
pub fn prefer_single_threaded_kernels() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", "1");
    }
}

/// The GPUs the given platforms run on, for a collection session's provenance.
pub fn gpus_for(platforms: &[Platform]) -> Vec<hspi_datasets::GpuInfo> {
    if platforms.iter().any(Platform::is_cuda) {
        cuda_devices()
    } else {
        Vec::new()
    }
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
