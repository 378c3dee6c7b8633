//! cuBLAS on an NVIDIA GPU through cudarc (dynamic loading: builds without a CUDA toolkit).
//! GEMMs — convolutions as im2col + GEMM, and linear layers — run on the device with
//! `cublasGemmEx` at f32, tf32, f16 or bf16 with f32 accumulation, cuBLAS choosing its own kernels
//! (which depend on the GPU's SM count and the batch size). Bias, ReLU and pooling are exact
//! operations and run on the host in the stored format.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::cublas::{result as cublas_result, sys as cublas_sys, CudaBlas};
use cudarc::driver::{sys as driver_sys, CudaContext, CudaStream, DevicePtr, DevicePtrMut};
use half::{bf16, f16};
use hspi_datasets::platform::slugify;
use hspi_datasets::{Engine, EngineKind, GpuInfo, Hardware, NumericFormat, Platform};

use super::ImageBackend;
use crate::error::{CollectError, Result};
use crate::zoo::{ImageModel, Layer};

/// Formats cuBLAS runs here, and the batch sizes whose kernel choices differ.
const FORMATS: [NumericFormat; 4] = [
    NumericFormat::F32,
    NumericFormat::Tf32,
    NumericFormat::F16,
    NumericFormat::Bf16,
];
const BATCH_SIZES: [u32; 3] = [1, 8, 32];

fn driver_present() -> bool {
    // SAFETY: only probes whether the shared libraries can be loaded.
    unsafe { driver_sys::is_culib_present() && cublas_sys::is_culib_present() }
}

fn cuda_err(e: impl std::fmt::Debug) -> CollectError {
    CollectError::Cuda(format!("{e:?}"))
}

fn device_info(ordinal: usize) -> Result<(GpuInfo, Arc<CudaContext>)> {
    let ctx = CudaContext::new(ordinal).map_err(cuda_err)?;
    let (major, minor) = ctx.compute_capability().map_err(cuda_err)?;
    let sms = ctx
        .attribute(driver_sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(cuda_err)?;
    let mut driver = 0i32;
    // SAFETY: the driver library is loaded (a context exists); the out-pointer is valid.
    unsafe { driver_sys::cuDriverGetVersion(&mut driver) }
        .result()
        .map_err(cuda_err)?;
    let blas = CudaBlas::new(ctx.default_stream()).map_err(cuda_err)?;
    let mut cublas = 0i32;
    // SAFETY: the handle is live for this call.
    unsafe { cublas_sys::cublasGetVersion_v2(*blas.handle(), &mut cublas) }
        .result()
        .map_err(cuda_err)?;
    let info = GpuInfo {
        name: ctx.name().map_err(cuda_err)?,
        compute_capability: (major as u32, minor as u32),
        sm_count: sms as u32,
        memory_bytes: ctx.total_mem().map_err(cuda_err)? as u64,
        driver_version: format!("cuda-api-{}.{}", driver / 1000, (driver % 1000) / 10),
        cuda_runtime_version: "n/a (driver API through cudarc)".into(),
        cublas_version: cublas.to_string(),
    };
    Ok((info, ctx))
}

/// The GPUs this machine exposes; empty without a driver.
pub fn cuda_devices() -> Vec<GpuInfo> {
    if !driver_present() {
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

/// Every format × batch size on every GPU present.
pub fn cuda_platforms() -> Vec<Platform> {
    let mut out = Vec::new();
    for info in cuda_devices() {
        for format in FORMATS {
            for batch_size in BATCH_SIZES {
                out.push(Platform {
                    hardware: hardware(&info),
                    engine: Engine {
                        kind: EngineKind::Cublas,
                        version: Some(info.cublas_version.clone()),
                    },
                    format,
                    kernel: None,
                    batch_size,
                });
            }
        }
    }
    out
}

enum Gemm {
    /// Weights [rows, k] on the device in the platform's storage type, host bias in f32.
    Layer {
        weight: DeviceMatrix,
        bias: Vec<f32>,
        rows: usize,
        k: usize,
        conv: Option<(usize, usize)>,
    },
    Relu,
    MaxPool2,
    Flatten,
}

enum DeviceMatrix {
    F32(cudarc::driver::CudaSlice<f32>),
    /// f16 or bf16 bit patterns.
    Half(cudarc::driver::CudaSlice<u16>),
}

pub struct CudaImage {
    platform: Platform,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    input_shape: [usize; 3],
    layers: Vec<Gemm>,
}

impl CudaImage {
    pub fn new(platform: &Platform, model: &ImageModel) -> Result<CudaImage> {
        if !driver_present() {
            return Err(CollectError::NoCudaDriver);
        }
        let unsupported = |reason: String| CollectError::Unsupported {
            platform: platform.to_string(),
            model: model.id.clone(),
            reason,
        };
        if !FORMATS.contains(&platform.format) || platform.kernel.is_some() {
            return Err(unsupported(
                "cuBLAS runs f32, tf32, f16 and bf16 with its own kernels".into(),
            ));
        }
        let n = CudaContext::device_count().map_err(cuda_err)?.max(0) as usize;
        let ctx = (0..n)
            .filter_map(|i| device_info(i).ok())
            .find(|(info, _)| hardware(info) == platform.hardware)
            .map(|(_, ctx)| ctx)
            .ok_or_else(|| unsupported("no GPU on this machine matches this hardware".into()))?;
        let stream = ctx.default_stream();
        let blas = CudaBlas::new(stream.clone()).map_err(cuda_err)?;
        let mut layers = Vec::new();
        for layer in &model.layers {
            layers.push(match (layer.gemm(), layer) {
                (Some(g), _) => Gemm::Layer {
                    weight: upload(&stream, g.weight, platform.format)?,
                    bias: g.bias.to_vec(),
                    rows: g.rows,
                    k: g.k,
                    conv: g.conv.map(|c| (c.kernel, c.padding)),
                },
                (None, Layer::Relu) => Gemm::Relu,
                (None, Layer::MaxPool2) => Gemm::MaxPool2,
                (None, _) => Gemm::Flatten,
            });
        }
        Ok(CudaImage {
            platform: platform.clone(),
            stream,
            blas,
            input_shape: model.input_shape,
            layers,
        })
    }

    fn store(&self, x: f32) -> f32 {
        match self.platform.format {
            NumericFormat::F16 => f16::from_f32(x).to_f32(),
            NumericFormat::Bf16 => bf16::from_f32(x).to_f32(),
            _ => x,
        }
    }

    /// out (row-major [rows, positions]) = W[rows, k] · X[positions, k]ᵀ on the device.
    fn gemm(&self, weight: &DeviceMatrix, rows: usize, k: usize, x: &[f32]) -> Result<Vec<f32>> {
        use cublas_sys::cudaDataType as Ty;
        let positions = x.len() / k;
        let xs = upload(&self.stream, x, self.platform.format)?;
        Ok(match (weight, &xs) {
            (DeviceMatrix::F32(w), DeviceMatrix::F32(xd)) => {
                self.gemm_ex(w, xd, Ty::CUDA_R_32F, rows, positions, k)?
            }
            (DeviceMatrix::Half(w), DeviceMatrix::Half(xd)) => {
                let bf = self.platform.format == NumericFormat::Bf16;
                let ty = if bf { Ty::CUDA_R_16BF } else { Ty::CUDA_R_16F };
                self.gemm_ex(w, xd, ty, rows, positions, k)?
                    .into_iter()
                    .map(|b| {
                        if bf {
                            bf16::from_bits(b).to_f32()
                        } else {
                            f16::from_bits(b).to_f32()
                        }
                    })
                    .collect()
            }
            _ => unreachable!("weights and activations share the platform's storage type"),
        })
    }

    /// One cublasGemmEx with f32 accumulation (tf32 inputs for the tf32 format). In column-major
    /// terms C (positions × rows) = op_T(Xc) · Wc, which is `out` in row-major [rows, positions].
    fn gemm_ex<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
        &self,
        w: &cudarc::driver::CudaSlice<T>,
        x: &cudarc::driver::CudaSlice<T>,
        ty: cublas_sys::cudaDataType,
        rows: usize,
        positions: usize,
        k: usize,
    ) -> Result<Vec<T>> {
        use cublas_sys::{
            cublasComputeType_t as Compute, cublasGemmAlgo_t, cublasOperation_t as Op,
        };
        let compute = match self.platform.format {
            NumericFormat::Tf32 => Compute::CUBLAS_COMPUTE_32F_FAST_TF32,
            _ => Compute::CUBLAS_COMPUTE_32F,
        };
        let (alpha, beta) = (1f32, 0f32);
        let (m, n, kk) = (positions as i32, rows as i32, k as i32);
        let mut c = self
            .stream
            .alloc_zeros::<T>(positions * rows)
            .map_err(cuda_err)?;
        {
            let (a, _ga) = x.device_ptr(&self.stream);
            let (b, _gb) = w.device_ptr(&self.stream);
            let (cp, _gc) = c.device_ptr_mut(&self.stream);
            // SAFETY: device buffers hold positions·k, rows·k and positions·rows elements of `ty`.
            unsafe {
                cublas_result::gemm_ex(
                    *self.blas.handle(),
                    Op::CUBLAS_OP_T,
                    Op::CUBLAS_OP_N,
                    m,
                    n,
                    kk,
                    &alpha as *const f32 as *const c_void,
                    a as *const c_void,
                    ty,
                    kk,
                    b as *const c_void,
                    ty,
                    kk,
                    &beta as *const f32 as *const c_void,
                    cp as *mut c_void,
                    ty,
                    m,
                    compute,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .map_err(cuda_err)?;
        }
        self.stream.clone_dtoh(&c).map_err(cuda_err)
    }
}

fn upload(stream: &Arc<CudaStream>, values: &[f32], format: NumericFormat) -> Result<DeviceMatrix> {
    Ok(match format {
        NumericFormat::F16 => DeviceMatrix::Half(
            stream
                .clone_htod(
                    &values
                        .iter()
                        .map(|v| f16::from_f32(*v).to_bits())
                        .collect::<Vec<u16>>(),
                )
                .map_err(cuda_err)?,
        ),
        NumericFormat::Bf16 => DeviceMatrix::Half(
            stream
                .clone_htod(
                    &values
                        .iter()
                        .map(|v| bf16::from_f32(*v).to_bits())
                        .collect::<Vec<u16>>(),
                )
                .map_err(cuda_err)?,
        ),
        _ => DeviceMatrix::F32(stream.clone_htod(values).map_err(cuda_err)?),
    })
}

impl ImageBackend for CudaImage {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    /// The whole batch goes through each GEMM together, as a served batch would.
    fn forward(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>> {
        let batch = inputs.len();
        let [mut c, mut h, mut w] = self.input_shape;
        let mut xs: Vec<Vec<f32>> = inputs
            .iter()
            .map(|x| x.iter().map(|v| self.store(*v)).collect())
            .collect();
        for layer in &self.layers {
            match layer {
                Gemm::Layer {
                    weight,
                    bias,
                    rows,
                    k,
                    conv,
                } => {
                    let (cols, positions) = match conv {
                        Some((kernel, padding)) => {
                            let cols: Vec<f32> = xs
                                .iter()
                                .flat_map(|x| {
                                    super::emulated::im2col(x, [c, h, w], *kernel, *padding)
                                })
                                .collect();
                            h = h + 2 * padding + 1 - kernel;
                            w = w + 2 * padding + 1 - kernel;
                            (cols, h * w)
                        }
                        None => (xs.concat(), 1),
                    };
                    let out = self.gemm(weight, *rows, *k, &cols)?;
                    let total = positions * batch;
                    xs = (0..batch)
                        .map(|img| {
                            let mut y = Vec::with_capacity(rows * positions);
                            for r in 0..*rows {
                                for p in 0..positions {
                                    y.push(
                                        self.store(out[r * total + img * positions + p] + bias[r]),
                                    );
                                }
                            }
                            y
                        })
                        .collect();
                    c = *rows;
                }
                Gemm::Relu => xs
                    .iter_mut()
                    .for_each(|x| x.iter_mut().for_each(|v| *v = v.max(0.0))),
                Gemm::MaxPool2 => {
                    xs = xs
                        .iter()
                        .map(|x| super::emulated::max_pool2(x, [c, h, w]))
                        .collect();
                    h /= 2;
                    w /= 2;
                }
                Gemm::Flatten => {}
            }
        }
        Ok(xs)
    }
}
