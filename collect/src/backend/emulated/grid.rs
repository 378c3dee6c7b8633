//! The emulated backend's registry entry: which platforms it owns, and its grid.

use hspi_datasets::{
    Accumulator, Engine, EngineKind, Hardware, KernelOptions, NumericFormat, Platform,
    ReductionOrder,
};

use super::{Arch, EmulatedImage, GpuImage, KernelSource};
use crate::backend::{on_this_cpu, runs_no, this_cpu, Backend, ImageRunner};
use crate::error::{CollectError, Result};
use crate::zoo::{ImageModel, Model, ModelId};

/// Emulated GPU kernels, scalar on this machine's CPU.
pub struct Emulated;

fn emu(
    format: NumericFormat,
    accumulator: Accumulator,
    order: ReductionOrder,
    split_k: u32,
    fma: bool,
) -> Platform {
    Platform {
        hardware: this_cpu(),
        engine: Engine {
            kind: EngineKind::Emulated,
            version: None,
        },
        format,
        kernel: Some(KernelOptions {
            accumulator,
            order,
            split_k,
            fma,
        }),
        batch_size: 1,
    }
}

/// Every emulated format with an f32 sequential FMA kernel, then the kernel dimensions varied
/// one at a time around that kernel.
fn grid() -> Vec<Platform> {
    use Accumulator as A;
    use NumericFormat as F;
    use ReductionOrder as R;
    let mut grid = Vec::new();
    for format in [
        F::F32,
        F::Tf32,
        F::Bf16,
        F::F16,
        F::Fp8E4m3,
        F::Fp8E5m2,
        F::Int8,
        F::Int4 { group: 32 },
        F::Int4 { group: 128 },
        F::MxInt8,
    ] {
        grid.push(emu(format, A::F32, R::Sequential, 1, true));
    }
    for order in [
        R::Pairwise,
        R::Blocked { tile: 16 },
        R::Blocked { tile: 32 },
        R::Blocked { tile: 64 },
        R::Blocked { tile: 128 },
    ] {
        grid.push(emu(F::F32, A::F32, order, 1, true));
    }
    for split_k in [2, 4, 8] {
        grid.push(emu(F::F32, A::F32, R::Sequential, split_k, true));
    }
    grid.push(emu(F::F32, A::F32, R::Sequential, 1, false));
    grid.push(emu(F::F16, A::F16, R::Sequential, 1, true));
    grid.push(emu(F::Bf16, A::Bf16, R::Sequential, 1, true));
    grid.push(emu(F::Tf32, A::F32, R::Blocked { tile: 32 }, 2, true));
    grid.push(emu(F::Bf16, A::F32, R::Blocked { tile: 64 }, 4, true));
    grid
}

/// The tensor-core rule an `emu-smXX` platform names; None for plain `emu`.
fn tensor_core_rule(platform: &Platform, model: &str) -> Result<Option<Arch>> {
    match platform.engine.version.as_deref() {
        Some(v) if v.starts_with("sm") => {
            v.parse()
                .map(Some)
                .map_err(|e: CollectError| CollectError::Unsupported {
                    platform: platform.to_string(),
                    model: model.into(),
                    reason: e.to_string(),
                })
        }
        _ => Ok(None),
    }
}

impl Backend for Emulated {
    fn name(&self) -> &'static str {
        "emulated"
    }

    fn owns(&self, platform: &Platform) -> bool {
        matches!(platform.hardware, Hardware::Cpu { .. })
            && platform.engine.kind == EngineKind::Emulated
    }

    fn platforms(&self, model: ModelId) -> Result<Vec<Platform>> {
        match model {
            ModelId::CnnDigits => Ok(grid()),
            other => Err(CollectError::NotRunHere {
                backend: self.name(),
                model: other.name().into(),
                reason: "it runs image models only".into(),
            }),
        }
    }

    fn check(&self, model: &Model, platform: &Platform) -> Result<()> {
        match model {
            // Building an image runner is cheap and validates the platform.
            Model::Image(m) => self.image_runner(m, platform).map(drop),
            other => Err(runs_no(self.name(), platform, "language", &other.info().id)),
        }
    }

    fn image_runner(
        &self,
        model: &ImageModel,
        platform: &Platform,
    ) -> Result<Box<dyn ImageRunner>> {
        on_this_cpu(platform, &model.id)?;
        match tensor_core_rule(platform, &model.id)? {
            Some(arch) => Ok(Box::new(GpuImage::new(
                platform,
                arch,
                model,
                KernelSource::Uniform(platform.kernel.unwrap_or_default()),
            )?)),
            None => Ok(Box::new(EmulatedImage::new(platform, model)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_has_distinct_platforms_the_backend_owns() {
        let g = grid();
        let set: std::collections::HashSet<_> = g.iter().collect();
        assert_eq!(set.len(), g.len());
        assert!(g.iter().all(|p| Emulated.owns(p)));
    }
}
