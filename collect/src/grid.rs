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

/// A comma-separated list whose items are platform strings or groups: `default` (the grid),
/// `candle` (the grid's candle platforms), `cuda` (every precision and batch size on every GPU
/// present). Repeats collapse to the first occurrence.
pub fn parse_platforms(
    spec: &str,
    model: &Model,
) -> Result<Vec<Platform>, hspi_datasets::PlatformParseError> {
    let mut out: Vec<Platform> = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let group = match item {
            "cuda" => crate::backend::cuda_platforms(),
            "default" | "grid" => default_grid(model),
            "candle" => default_grid(model)
                .into_iter()
                .filter(|p| p.engine.kind == EngineKind::Candle)
                .collect(),
            platform => vec![platform.parse()?],
        };
        for p in group {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// The platforms to collect here: as [`parse_platforms`], but a `cuda` group that finds no GPU
/// and a list naming nothing are errors.
pub fn platforms_to_run(spec: &str, model: &Model) -> crate::Result<Vec<Platform>> {
    let platforms = parse_platforms(spec, model)?;
    if names_cuda_group(spec) && !platforms.iter().any(Platform::is_cuda) {
        return Err(crate::CollectError::NoCudaDriver);
    }
    if platforms.is_empty() {
        return Err(crate::CollectError::NoPlatforms(spec.into()));
    }
    Ok(platforms)
}

/// Whether `spec` asks for the `cuda` group (which is empty on a machine without a GPU).
pub fn names_cuda_group(spec: &str) -> bool {
    spec.split(',').any(|item| item.trim() == "cuda")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_platform_strings_mix_in_one_list() {
        let model = Model::Image(crate::zoo::cnn_digits::embedded());
        let candle = parse_platforms("candle", &model).unwrap();
        let extra = "cpu-avx2/emu/int8/acc-f32.seq.sk1.fma/bs1";
        let mixed = parse_platforms(&format!("{extra}, candle,{}", candle[0]), &model).unwrap();
        assert_eq!(mixed[0].to_string(), extra);
        assert_eq!(
            &mixed[1..],
            &candle[..],
            "the repeat of candle[0] collapses"
        );
        assert!(names_cuda_group("candle, cuda"));
        assert!(!names_cuda_group("cuda-h100-sm90-132sm/cublas/f32/bs1"));
        let e = parse_platforms("candle,gpu/x/f32/bs1", &model).unwrap_err();
        assert!(e.to_string().contains("gpu/x/f32/bs1"), "{e}");
    }

    #[test]
    fn image_grid_has_at_least_24_distinct_platforms() {
        let g = image_grid();
        let set: std::collections::HashSet<_> = g.iter().collect();
        assert_eq!(set.len(), g.len());
        assert!(g.len() >= 24, "{}", g.len());
    }
}
