//! Backends compute zoo models on this machine: candle's CPU kernels, emulated GPU kernels, and
//! NVIDIA GPUs through cuBLAS (a stand-in that says why when the `cuda` feature is off). One
//! backend per module, registered once in [`BACKENDS`]; [`backend_for`] is the one place that
//! maps a platform to its backend. Everything else — the capability check, the platform groups
//! of `--platforms`, the default grid, the GPUs in a session's provenance — asks the registry.

pub mod candle_cpu;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
mod cuda;
pub mod emulated;
mod runner;

pub use crate::zoo::{forward_layers, CandleLayer};
pub use candle_cpu::{CandleCpu, QuantizedLm, TinyLmRunner};
pub use cuda::{gpu_all_positions, Cuda};
pub use emulated::Emulated;
pub use runner::{AllPositions, Batch, ImagePool, ImageRunner, Runner};

use hspi_datasets::{GpuInfo, Hardware, Platform};

use crate::error::{CollectError, Result};
use crate::zoo::{ImageModel, Model, ModelId};

/// A way of computing zoo models here. Adding one: a module implementing this trait, and one
/// line in [`BACKENDS`] (see CONTRIBUTING.md).
pub trait Backend: Sync {
    /// Its name, which is also its group in `--platforms` (`candle`, `emulated`, `cuda`).
    fn name(&self) -> &'static str;
    /// Whether `platform` is computed by this backend (by hardware kind and engine), whether or
    /// not this machine can run it.
    fn owns(&self, platform: &Platform) -> bool;
    /// The platforms it runs `model` at on this machine, or why it runs none.
    fn platforms(&self, model: ModelId) -> Result<Vec<Platform>>;
    /// Whether its platforms are part of `hspi collect`'s default grid.
    fn in_default_grid(&self) -> bool {
        true
    }
    /// Whether this machine can run `model` at `platform`, loading nothing heavy.
    fn check(&self, model: &Model, platform: &Platform) -> Result<()>;
    /// An image model at `platform`: one runner per worker thread.
    fn image_runner(
        &self,
        model: &ImageModel,
        platform: &Platform,
    ) -> Result<Box<dyn ImageRunner>> {
        Err(runs_no(self.name(), platform, "image", &model.id))
    }
    /// A language model at `platform` (its weights load here).
    fn lm_runner(&self, model: &Model, platform: &Platform) -> Result<Box<dyn Runner>> {
        Err(runs_no(self.name(), platform, "language", &model.info().id))
    }
    /// Whether independent image batches may run on several cores at once (when the kernels
    /// themselves run on one thread, as `hspi collect` sets them).
    fn parallel_images(&self) -> bool {
        true
    }
    /// The GPUs its platforms run on, for a session's provenance.
    fn gpus(&self) -> Vec<GpuInfo> {
        Vec::new()
    }
}

pub(crate) fn runs_no(backend: &str, platform: &Platform, kind: &str, model: &str) -> CollectError {
    CollectError::Unsupported {
        platform: platform.to_string(),
        model: model.into(),
        reason: format!("the {backend} backend runs no {kind} models"),
    }
}

/// Every backend, in the order of the default grid.
pub static BACKENDS: [&dyn Backend; 3] = [&CandleCpu, &Emulated, &Cuda];

/// The backend that computes `platform`, if any does.
pub fn backend_for(platform: &Platform) -> Option<&'static dyn Backend> {
    BACKENDS.iter().copied().find(|b| b.owns(platform))
}

/// The backend named `name` (a `--platforms` group).
pub fn named(name: &str) -> Option<&'static dyn Backend> {
    BACKENDS.iter().copied().find(|b| b.name() == name)
}

fn owner(model: &str, platform: &Platform) -> Result<&'static dyn Backend> {
    backend_for(platform).ok_or_else(|| CollectError::Unsupported {
        platform: platform.to_string(),
        model: model.into(),
        reason: "no local backend runs this engine on this hardware".into(),
    })
}

/// Whether this machine can run `model` at `platform`, without loading anything heavy.
pub fn check(model: &Model, platform: &Platform) -> Result<()> {
    owner(&model.info().id, platform)?.check(model, platform)
}

/// `model` loaded at `platform`. Image models get one runner per worker (see
/// [`prefer_single_threaded_kernels`]); language models are checked before their weights load.
pub fn open(model: &Model, platform: &Platform) -> Result<Box<dyn Runner>> {
    let backend = owner(&model.info().id, platform)?;
    match model {
        Model::Image(m) => {
            let workers = if backend.parallel_images() {
                image_workers()
            } else {
                1
            };
            Ok(Box::new(ImagePool {
                workers: (0..workers)
                    .map(|_| backend.image_runner(m, platform))
                    .collect::<Result<_>>()?,
            }))
        }
        _ => {
            backend.check(model, platform)?;
            backend.lm_runner(model, platform)
        }
    }
}

/// `model` at the GPU platform of `plan`, computed on this CPU by emulated kernels (image models).
pub fn open_plan(model: &Model, plan: &emulated::KernelPlan) -> Result<Box<dyn Runner>> {
    let Model::Image(m) = model else {
        return Err(CollectError::Unsupported {
            platform: plan.platform.to_string(),
            model: model.info().id,
            reason: "kernel plans reproduce image models' GEMMs only".into(),
        });
    };
    Ok(Box::new(ImagePool {
        workers: (0..image_workers())
            .map(|_| emulated::plan_runner(plan, m))
            .collect::<Result<_>>()?,
    }))
}

/// One image runner at `platform`, for callers that drive it themselves (the border search).
pub fn image_runner(platform: &Platform, model: &ImageModel) -> Result<Box<dyn ImageRunner>> {
    owner(&model.id, platform)?.image_runner(model, platform)
}

/// The GPUs the given platforms run on, for a collection session's provenance.
pub fn gpus_for(platforms: &[Platform]) -> Vec<GpuInfo> {
    let mut gpus: Vec<GpuInfo> = Vec::new();
    for backend in BACKENDS {
        if platforms.iter().any(|p| backend.owns(p)) {
            gpus.extend(backend.gpus());
        }
    }
    gpus
}

/// This machine's GPUs, as the backends that drive one see them (none without the cuda feature).
pub fn local_gpus() -> Vec<GpuInfo> {
    BACKENDS.iter().flat_map(|b| b.gpus()).collect()
}

/// The default grid of `hspi collect`: every default backend's platforms for `model`, skipping
/// backends that do not run it.
pub fn default_grid(model: ModelId) -> Vec<Platform> {
    BACKENDS
        .iter()
        .filter(|b| b.in_default_grid())
        .filter_map(|b| b.platforms(model).ok())
        .flatten()
        .collect()
}

/// A CPU platform runs here only on this machine's CPU path: the ISA is part of the platform.
pub(crate) fn on_this_cpu(platform: &Platform, model: &str) -> Result<()> {
    let here = hspi_datasets::provenance::isa_path();
    match &platform.hardware {
        Hardware::Cpu { isa } if isa != here => Err(CollectError::Unsupported {
            platform: platform.to_string(),
            model: model.into(),
            reason: format!("this machine's CPU path is {here}, not {isa}"),
        }),
        _ => Ok(()),
    }
}

/// What `lm_runner` answers when handed an image model ([`open`] never does that).
pub(crate) fn not_a_language_model(platform: &Platform) -> CollectError {
    CollectError::WrongInput {
        platform: platform.to_string(),
        expected: "a language model",
        got: "an image model",
    }
}

/// The CPU hardware of this machine's platforms.
pub(crate) fn this_cpu() -> Hardware {
    Hardware::Cpu {
        isa: hspi_datasets::provenance::isa_path().into(),
    }
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

/// CPU image platforms compute independent batches on every core when their kernels run on one
/// thread: the same bits per input, several inputs at once. Kernel threads or batch workers,
/// never both.
fn image_workers() -> usize {
    let single_threaded_kernels = std::env::var("RAYON_NUM_THREADS").is_ok_and(|n| n.trim() == "1");
    if !single_threaded_kernels {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}
