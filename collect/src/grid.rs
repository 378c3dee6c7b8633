//! Platform grids: what this machine can run for a model, and the default grid of `hspi collect`.

use hspi_datasets::{
    Accumulator, Engine, EngineKind, Hardware, KernelOptions, NumericFormat, Platform,
    ReductionOrder,
};

use crate::zoo::{smollm2, Model};

fn host() -> Hardware {
    Hardware::Cpu {
        isa: hspi_datasets::provenance::isa_path().into(),
    }
}

pub fn candle_engine() -> Engine {
    Engine {
        kind: EngineKind::Candle,
        version: Some(crate::CANDLE_VERSION.into()),
    }
}

fn candle(format: NumericFormat) -> Platform {
    Platform {
        hardware: host(),
        engine: candle_engine(),
        format,
        kernel: None,
        batch_size: 1,
    }
}

fn emu(
    format: NumericFormat,
    accumulator: Accumulator,
    order: ReductionOrder,
    split_k: u32,
    fma: bool,
) -> Platform {
    Platform {
        hardware: host(),
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

/// The image-model grid: candle at three dtypes, every emulated format with an f32 sequential
/// FMA kernel, then the kernel dimensions varied one at a time around that kernel.
pub fn image_grid() -> Vec<Platform> {
    use Accumulator as A;
    use NumericFormat as F;
    use ReductionOrder as R;
    let mut grid: Vec<Platform> = [F::F32, F::F16, F::Bf16].into_iter().map(candle).collect();
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

/// The dtypes candle computes the tiny LM in.
pub fn tiny_lm_formats() -> Vec<NumericFormat> {
    vec![NumericFormat::F32, NumericFormat::F16, NumericFormat::Bf16]
}

/// candle's dtype, re-exported so callers need no candle dependency.
pub type Dtype = candle_core::DType;

pub fn candle_dtype(format: NumericFormat) -> Dtype {
    match format {
        NumericFormat::F16 => candle_core::DType::F16,
        NumericFormat::Bf16 => candle_core::DType::BF16,
        _ => candle_core::DType::F32,
    }
}

pub fn tiny_lm_grid() -> Vec<Platform> {
    tiny_lm_formats().into_iter().map(candle).collect()
}

/// Candle at every format it can run the language model at.
pub fn lm_grid() -> Vec<Platform> {
    smollm2::formats().into_iter().map(candle).collect()
}

pub fn default_grid(model: &Model) -> Vec<Platform> {
    match model {
        Model::Image(_) => image_grid(),
        Model::Lm { .. } => lm_grid(),
        Model::Tiny(_) => tiny_lm_grid(),
    }
}

/// `default`, `candle` (the candle platforms of the default grid), `cuda` (every format and batch
/// size on every GPU present), or a comma-separated list of platform strings.
pub fn parse_platforms(
    spec: &str,
    model: &Model,
) -> Result<Vec<Platform>, hspi_datasets::PlatformParseError> {
    match spec.trim() {
        "cuda" => Ok(crate::backend::cuda_platforms()),
        "default" | "grid" => Ok(default_grid(model)),
        "candle" => Ok(default_grid(model)
            .into_iter()
            .filter(|p| p.engine.kind == EngineKind::Candle)
            .collect()),
        list => list
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().parse())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_grid_has_at_least_24_distinct_platforms() {
        let g = image_grid();
        let set: std::collections::HashSet<_> = g.iter().collect();
        assert_eq!(set.len(), g.len());
        assert!(g.len() >= 24, "{}", g.len());
    }
}
