//! Image models on the GPU: convolutions as im2col + cuBLAS GEMM, linear layers as GEMM, bias,
//! ReLU and pooling as NVRTC kernels. Activations stay on the device, rounded to the platform's
//! storage format after every layer; the whole batch goes through each GEMM together, as a
//! served batch would.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use half::{bf16, f16};
use hspi_datasets::Platform;

use super::cuda_err;
use super::gemm::{DeviceMatrix, Gemm};
use super::kernels::{Kernels, Storage};
use crate::backend::ImageRunner;
use crate::error::Result;
use crate::zoo::{ImageModel, Step};

/// A step with its weights in the GEMM's operand type and its bias, on the device.
type CudaStep = Step<DeviceMatrix, CudaSlice<f32>>;

pub struct CudaImage {
    platform: Platform,
    stream: Arc<CudaStream>,
    gemm: Gemm,
    kernels: Kernels,
    input_shape: [usize; 3],
    steps: Vec<CudaStep>,
}

/// Host f32 values to the device in the GEMM operand type of `storage`.
pub(super) fn upload(
    stream: &Arc<CudaStream>,
    values: &[f32],
    storage: Storage,
) -> Result<DeviceMatrix> {
    let half = |bits: Vec<u16>| -> Result<DeviceMatrix> {
        Ok(DeviceMatrix::Half(
            stream.clone_htod(&bits).map_err(cuda_err)?,
        ))
    };
    match storage {
        Storage::F16 => half(values.iter().map(|v| f16::from_f32(*v).to_bits()).collect()),
        Storage::Bf16 => half(
            values
                .iter()
                .map(|v| bf16::from_f32(*v).to_bits())
                .collect(),
        ),
        Storage::F32 => Ok(DeviceMatrix::F32(
            stream.clone_htod(values).map_err(cuda_err)?,
        )),
    }
}

impl CudaImage {
    pub fn new(platform: &Platform, model: &ImageModel) -> Result<CudaImage> {
        let (stream, gemm, kernels) = super::open(platform, &model.id)?;
        let steps = model.steps(|g| {
            Ok((
                upload(&stream, g.weight, gemm.storage())?,
                stream.clone_htod(g.bias).map_err(cuda_err)?,
            ))
        })?;
        Ok(CudaImage {
            platform: platform.clone(),
            stream,
            gemm,
            kernels,
            input_shape: model.input_shape,
            steps,
        })
    }

    /// The GEMM operand for activations `x` ([positions, k] row-major, f32 stored values).
    fn operand(&self, x: CudaSlice<f32>) -> Result<DeviceMatrix> {
        Ok(match self.gemm.storage() {
            Storage::F32 => DeviceMatrix::F32(x),
            half => DeviceMatrix::Half(self.kernels.to_half_bits(&x, half)?),
        })
    }
}

impl ImageRunner for CudaImage {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    fn forward(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>> {
        let batch = inputs.len();
        let storage = self.gemm.storage();
        let [mut c, mut h, mut w] = self.input_shape;
        let mut x = self.stream.clone_htod(&inputs.concat()).map_err(cuda_err)?;
        self.kernels.round_to_storage(&mut x, storage)?;
        for step in &self.steps {
            match step {
                Step::Gemm {
                    weight,
                    bias,
                    rows,
                    k,
                    conv,
                } => {
                    let (cols, positions) = match conv {
                        Some((kernel, padding)) => {
                            let cols =
                                self.kernels
                                    .im2col(&x, batch, [c, h, w], *kernel, *padding)?;
                            h = h + 2 * padding + 1 - kernel;
                            w = w + 2 * padding + 1 - kernel;
                            (cols, h * w)
                        }
                        None => (x, 1),
                    };
                    let out = self.gemm.run(
                        weight,
                        &self.operand(cols)?,
                        *rows,
                        batch * positions,
                        *k,
                    )?;
                    x = match &out {
                        DeviceMatrix::F32(o) => self.kernels.add_bias_store(
                            o,
                            Storage::F32,
                            bias,
                            batch,
                            *rows,
                            positions,
                            storage,
                        )?,
                        DeviceMatrix::Half(o) => self
                            .kernels
                            .add_bias_store(o, storage, bias, batch, *rows, positions, storage)?,
                    };
                    c = *rows;
                }
                Step::Relu => self.kernels.relu(&mut x)?,
                Step::MaxPool2 => {
                    x = self.kernels.max_pool2(&x, batch, [c, h, w])?;
                    h /= 2;
                    w /= 2;
                }
                Step::Flatten => {}
            }
        }
        let flat = self.stream.clone_dtoh(&x).map_err(cuda_err)?;
        let per_input = flat.len() / batch.max(1);
        Ok(flat.chunks(per_input).map(<[f32]>::to_vec).collect())
    }
}
