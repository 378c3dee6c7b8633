//! NVIDIA GPUs through cudarc, loaded at run time (builds without a CUDA toolkit): which GPUs are
//! here, what they are (the provenance that goes into every platform and session), and the
//! platforms hspi runs on them. The image backend is in `image.rs`, the decoder language models' in
//! `decoder.rs`, the cuBLAS call in `gemm.rs`, the NVRTC kernels in `kernels.rs`.

mod backend;
mod decoder;
mod gemm;
mod image;
mod kernels;

use std::sync::Arc;

use cudarc::cublas::{sys as cublas_sys, CudaBlas};
use cudarc::driver::{sys as driver_sys, CudaContext};
use hspi_datasets::platform::slugify;
use hspi_datasets::{
    Accumulator, Engine, EngineKind, GpuInfo, Hardware, KernelOptions, NumericFormat, Platform,
    ReductionOrder,
};

pub use backend::Cuda;
use decoder::CudaLm;
use image::CudaImage;

use crate::error::{CollectError, Result};

/// The precisions cuBLAS is asked for: operand format and accumulator.
const PRECISIONS: [(NumericFormat, Accumulator); 5] = [
    (NumericFormat::F32, Accumulator::F32),
    (NumericFormat::Tf32, Accumulator::F32),
    (NumericFormat::F16, Accumulator::F32),
    (NumericFormat::Bf16, Accumulator::F32),
    (NumericFormat::F16, Accumulator::F16),
];
/// Batch sizes whose GEMM shapes make cuBLAS choose different kernels.
const BATCH_SIZES: [u32; 3] = [1, 8, 32];

/// Whether the driver and the libraries hspi loads are all here; without the driver the answer
/// is the usual "no CUDA driver", with the driver but not a library it names the library.
fn libraries() -> std::result::Result<(), CollectError> {
    // SAFETY: each call only probes whether a shared library can be loaded.
    let (driver, cublas, nvrtc) = unsafe {
        (
            driver_sys::is_culib_present(),
            cublas_sys::is_culib_present(),
            cudarc::nvrtc::sys::is_culib_present(),
        )
    };
    let missing: Vec<&str> = [("libcublas (cuBLAS)", cublas), ("libnvrtc (NVRTC)", nvrtc)]
        .iter()
        .filter(|(_, here)| !here)
        .map(|(name, _)| *name)
        .collect();
    match (driver, missing.is_empty()) {
        (false, _) => Err(CollectError::NoCudaDriver),
        (true, true) => Ok(()),
        (true, false) => Err(CollectError::Cuda(format!(
            "the NVIDIA driver is here but {} cannot be loaded: install the CUDA toolkit's \
             libraries, or add the directory holding them (often /usr/local/cuda/lib64) to \
             LD_LIBRARY_PATH",
            missing.join(" and ")
        ))),
    }
}

fn cuda_err(e: impl std::fmt::Debug) -> CollectError {
    CollectError::Cuda(format!("{e:?}"))
}

/// `130100` → `13.1.0`, the cuBLAS version encoding.
fn dotted(version: i32) -> String {
    format!(
        "{}.{}.{}",
        version / 10000,
        (version / 100) % 100,
        version % 100
    )
}

/// `13000` → `13.0`, the CUDA API version encoding.
fn cuda_api(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// The kernel module's version line ("… Kernel Module for x86_64  580.159.04  Release Build …").
fn kernel_module_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

fn runtime_version() -> String {
    // SAFETY: only probes whether libcudart can be loaded; cudarc panics on a missing library.
    if !unsafe { cudarc::runtime::sys::is_culib_present() } {
        return "not installed (hspi uses the driver API)".into();
    }
    cudarc::runtime::result::version::get()
        .map(cuda_api)
        .unwrap_or_else(|e| format!("unknown ({e:?})"))
}

fn nvrtc_version() -> String {
    // SAFETY: as above, for libnvrtc.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return "not installed".into();
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; both out-pointers are valid.
    match unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }.result() {
        Ok(()) => format!("{major}.{minor}"),
        Err(e) => format!("unknown ({e:?})"),
    }
}

fn device_info(ordinal: usize) -> Result<(GpuInfo, Arc<CudaContext>)> {
    let ctx = CudaContext::new(ordinal).map_err(cuda_err)?;
    let (major, minor) = ctx.compute_capability().map_err(cuda_err)?;
    let sms = ctx
        .attribute(driver_sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(cuda_err)?;
    let mut driver_api = 0i32;
    // SAFETY: the driver library is loaded (a context exists); the out-pointer is valid.
    unsafe { driver_sys::cuDriverGetVersion(&mut driver_api) }
        .result()
        .map_err(cuda_err)?;
    let blas = CudaBlas::new(ctx.default_stream()).map_err(cuda_err)?;
    let mut cublas = 0i32;
    // SAFETY: the handle is live for this call.
    unsafe { cublas_sys::cublasGetVersion_v2(*blas.handle(), &mut cublas) }
        .result()
        .map_err(cuda_err)?;
    let api = cuda_api(driver_api);
    let info = GpuInfo {
        name: ctx.name().map_err(cuda_err)?,
        compute_capability: (major as u32, minor as u32),
        sm_count: sms as u32,
        memory_bytes: ctx.total_mem().map_err(cuda_err)? as u64,
        driver_version: match kernel_module_version() {
            Some(v) => format!("{v} (CUDA {api})"),
            None => format!("CUDA {api}"),
        },
        cuda_runtime_version: runtime_version(),
        cublas_version: dotted(cublas),
        nvrtc_version: nvrtc_version(),
    };
    Ok((info, ctx))
}

/// The GPUs this machine exposes; empty without a driver.
fn cuda_devices() -> Vec<GpuInfo> {
    if libraries().is_err() {
        return Vec::new();
    }
    let n = CudaContext::device_count().unwrap_or(0).max(0) as usize;
    (0..n)
        .filter_map(|i| device_info(i).ok().map(|(info, _)| info))
        .collect()
}

fn hardware(info: &GpuInfo) -> Hardware {
    Hardware::Cuda {
        gpu: slugify(&info.name),
        compute_capability: info.compute_capability,
        sm_count: info.sm_count,
    }
}

/// The kernel field of a cuBLAS platform: none for the default f32 accumulation.
fn kernel(accumulator: Accumulator) -> Option<KernelOptions> {
    (accumulator != Accumulator::F32).then_some(KernelOptions {
        accumulator,
        order: ReductionOrder::Library,
        split_k: 1,
        fma: true,
    })
}

/// Every precision × batch size on every GPU present.
fn cuda_platforms() -> Vec<Platform> {
    let mut out = Vec::new();
    for info in cuda_devices() {
        for (format, accumulator) in PRECISIONS {
            for batch_size in BATCH_SIZES {
                out.push(Platform {
                    hardware: hardware(&info),
                    engine: Engine {
                        kind: EngineKind::Cublas,
                        version: Some(info.cublas_version.clone()),
                    },
                    format,
                    kernel: kernel(accumulator),
                    batch_size,
                });
            }
        }
    }
    out
}

/// The model whose weights are at `weights` on this machine's first GPU at cuBLAS's `format`
/// (f32 accumulation, one sequence at a time), scoring every position of a sequence in one pass:
/// a fresh audit's reference engine (`--reference-gpu`).
pub fn gpu_all_positions(
    weights: &std::path::Path,
    format: NumericFormat,
) -> Result<Box<dyn crate::backend::AllPositions>> {
    libraries()?;
    let platforms = cuda_platforms();
    let platform = platforms
        .iter()
        .find(|p| p.format == format && p.batch_size == 1 && p.kernel.is_none())
        .ok_or_else(|| match platforms.is_empty() {
            true => CollectError::Cuda("the driver reports no GPU".into()),
            false => CollectError::Cuda(format!(
                "the GPU pass computes f32, tf32, f16 and bf16, not {format}"
            )),
        })?;
    Ok(Box::new(CudaLm::load(weights, platform)?))
}

/// The context of the GPU `platform` names, or why there is none.
fn context_for(platform: &Platform) -> std::result::Result<Arc<CudaContext>, CollectError> {
    libraries()?;
    let n = CudaContext::device_count().map_err(cuda_err)?.max(0) as usize;
    (0..n)
        .filter_map(|i| device_info(i).ok())
        .find(|(info, _)| hardware(info) == platform.hardware)
        .map(|(_, ctx)| ctx)
        .ok_or_else(|| {
            CollectError::Cuda(format!("no GPU on this machine is {}", platform.hardware))
        })
}

/// What every model on a GPU platform starts from: the GPU's stream, the cuBLAS GEMM at the
/// platform's precision, and the NVRTC kernels compiled for it.
fn open(
    platform: &Platform,
    model: &str,
) -> Result<(
    Arc<cudarc::driver::CudaStream>,
    gemm::Gemm,
    kernels::Kernels,
)> {
    let ctx = context_for(platform)?;
    let (format, accumulator) = precision(platform).ok_or_else(|| unsupported(platform, model))?;
    let stream = ctx.default_stream();
    let gemm = gemm::Gemm {
        blas: CudaBlas::new(stream.clone()).map_err(cuda_err)?,
        stream: stream.clone(),
        format,
        accumulator,
    };
    let kernels = kernels::Kernels::compile(&ctx, stream.clone())?;
    Ok((stream, gemm, kernels))
}

fn unsupported(platform: &Platform, model: &str) -> CollectError {
    CollectError::Unsupported {
        platform: platform.to_string(),
        model: model.into(),
        reason: "on a GPU hspi runs cuBLAS (engine cublas) at f32, tf32, f16 and bf16 with f32 \
                 accumulation, and f16 with acc-f16; the kernel field may only name the \
                 accumulator"
            .into(),
    }
}

/// Whether this machine can run `platform`, building nothing: the libraries load, cuBLAS runs
/// the precision, and a GPU here is the platform's hardware.
fn check(platform: &Platform, model: &str) -> Result<()> {
    libraries()?;
    precision(platform).ok_or_else(|| unsupported(platform, model))?;
    if !cuda_devices()
        .iter()
        .any(|g| hardware(g) == platform.hardware)
    {
        return Err(CollectError::Cuda(format!(
            "no GPU on this machine is {}",
            platform.hardware
        )));
    }
    Ok(())
}

/// The operand format and accumulator a cuBLAS platform asks for, if it is one hspi runs.
fn precision(platform: &Platform) -> Option<(NumericFormat, Accumulator)> {
    if platform.engine.kind != EngineKind::Cublas {
        return None;
    }
    let accumulator = match platform.kernel {
        None => Accumulator::F32,
        Some(k) if k.order == ReductionOrder::Library => k.accumulator,
        Some(_) => return None,
    };
    PRECISIONS
        .into_iter()
        .find(|p| *p == (platform.format, accumulator))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_people_write_them() {
        assert_eq!(dotted(130100), "13.1.0");
        assert_eq!(dotted(120604), "12.6.4");
        assert_eq!(cuda_api(13000), "13.0");
        assert_eq!(cuda_api(12060), "12.6");
    }

    #[test]
    fn f16_accumulation_is_the_one_kernel_field() {
        assert_eq!(kernel(Accumulator::F32), None);
        let k = kernel(Accumulator::F16).unwrap();
        assert_eq!(k.to_string(), "acc-f16");
    }
}
