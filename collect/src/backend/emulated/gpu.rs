//! hspi's CUDA image pipeline (backend/cuda/image.rs) computed on the CPU with emulated GPU
//! kernels: activations stored in the platform's format; each layer one GEMM over the whole
//! batch (cuBLAS's m = batch · positions, n = output channels, k = patch length), its output
//! written in the storage type, the f32 bias added and the sum stored; ReLU and pooling exact.
//! Which kernel runs a GEMM comes from a [`KernelSource`]: one kernel for all (an `emu-smXX`
//! platform's kernel field) or a plan fitted to a GPU's records, per GEMM shape.

use hspi_datasets::{KernelOptions, NumericFormat, Platform};

use super::gpu_dot::GpuDot;
use super::im2col;
use super::max_pool2;
use super::plan::{GemmShape, KernelPlan};
use super::tensor_core::Arch;
use crate::backend::ImageRunner;
use crate::error::{CollectError, Result};
use crate::rounding::{round_bf16, round_f16};
use crate::zoo::{ImageModel, Step};

/// Where each GEMM's kernel comes from.
#[derive(Debug, Clone)]
pub enum KernelSource {
    Uniform(KernelOptions),
    Plan(Box<KernelPlan>),
}

impl KernelSource {
    fn kernel(&self, shape: GemmShape) -> Result<KernelOptions> {
        match self {
            KernelSource::Uniform(k) => Ok(*k),
            KernelSource::Plan(plan) => plan.kernel(shape),
        }
    }
}

/// A step with its weights as stored on the GPU (rounded to f16/bf16 for those formats).
type GpuStep = Step<Vec<f32>, Vec<f32>>;

/// A batch's activations: [batch][c][h][w], values as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Activations {
    pub values: Vec<f32>,
    pub batch: usize,
    pub shape: [usize; 3],
}

/// The model prepared for one GPU architecture and numeric format.
#[derive(Debug, Clone)]
pub struct GpuModel {
    pub arch: Arch,
    pub format: NumericFormat,
    input_shape: [usize; 3],
    steps: Vec<GpuStep>,
}

impl GpuModel {
    pub fn new(arch: Arch, format: NumericFormat, model: &ImageModel) -> Result<GpuModel> {
        if !matches!(
            format,
            NumericFormat::F32 | NumericFormat::Tf32 | NumericFormat::F16 | NumericFormat::Bf16
        ) {
            return Err(CollectError::Unsupported {
                platform: format!("{arch}/{format}"),
                model: model.id.clone(),
                reason: "GPU GEMMs here run f32, tf32, f16 and bf16 (as hspi's CUDA backend)"
                    .into(),
            });
        }
        let mut m = GpuModel {
            arch,
            format,
            input_shape: model.input_shape,
            steps: Vec::new(),
        };
        m.steps = model.steps(|g| {
            Ok((
                g.weight.iter().map(|w| m.store(*w)).collect(),
                g.bias.to_vec(),
            ))
        })?;
        Ok(m)
    }

    /// A value as the platform stores it between layers (and as GEMMs write their output).
    pub fn store(&self, x: f32) -> f32 {
        match self.format {
            NumericFormat::F16 => round_f16(x),
            NumericFormat::Bf16 => round_bf16(x),
            _ => x,
        }
    }

    pub fn layers(&self) -> usize {
        self.steps.len()
    }

    /// The GEMM shape of layer `layer` for a batch of `batch`, None for weightless layers.
    pub fn gemm_shape(&self, layer: usize, batch: usize) -> Option<GemmShape> {
        let [_, mut h, mut w] = self.input_shape;
        for (i, step) in self.steps.iter().enumerate() {
            match step {
                Step::Gemm { rows, k, conv, .. } => {
                    let positions = match conv {
                        Some((kernel, padding)) => {
                            h = h + 2 * padding + 1 - kernel;
                            w = w + 2 * padding + 1 - kernel;
                            h * w
                        }
                        None => 1,
                    };
                    if i == layer {
                        return Some(GemmShape {
                            m: batch * positions,
                            n: *rows,
                            k: *k,
                        });
                    }
                }
                Step::MaxPool2 => {
                    h /= 2;
                    w /= 2;
                }
                _ => {}
            }
            if i == layer {
                return None;
            }
        }
        None
    }

    /// The batch's inputs as stored on the device.
    pub fn input(&self, images: &[&[f32]]) -> Activations {
        Activations {
            values: images.concat().iter().map(|v| self.store(*v)).collect(),
            batch: images.len(),
            shape: self.input_shape,
        }
    }

    /// Layer `layer` applied to `x`; `kernel` runs its GEMM (unused by weightless layers).
    pub fn step(&self, layer: usize, x: &Activations, kernel: Option<&GpuDot>) -> Activations {
        let [c, h, w] = x.shape;
        let batch = x.batch;
        match &self.steps[layer] {
            Step::Gemm {
                weight,
                bias,
                rows,
                k,
                conv,
            } => {
                let dot = kernel.expect("a GEMM layer runs with a kernel");
                let per_image = c * h * w;
                let (cols, positions, shape) = match conv {
                    Some((kernel, padding)) => {
                        let (oh, ow) = (h + 2 * padding + 1 - kernel, w + 2 * padding + 1 - kernel);
                        let cols: Vec<f32> = x
                            .values
                            .chunks(per_image)
                            .flat_map(|img| im2col(img, [c, h, w], *kernel, *padding))
                            .collect();
                        (cols, oh * ow, [*rows, oh, ow])
                    }
                    None => (x.values.clone(), 1, [*rows, 1, 1]),
                };
                let cols: Vec<f32> = cols.iter().map(|v| dot.operand(*v)).collect();
                let weight: Vec<f32> = weight.iter().map(|v| dot.operand(*v)).collect();
                let mut out = vec![0f32; batch * rows * positions];
                for img in 0..batch {
                    for r in 0..*rows {
                        let wr = &weight[r * k..(r + 1) * k];
                        for p in 0..positions {
                            let row = img * positions + p;
                            let acc = dot.dot(wr, &cols[row * k..(row + 1) * k]);
                            // The GEMM writes its output type; the bias kernel adds in f32 and
                            // stores.
                            out[(img * rows + r) * positions + p] =
                                self.store(self.store(acc) + bias[r]);
                        }
                    }
                }
                Activations {
                    values: out,
                    batch,
                    shape,
                }
            }
            Step::Relu => Activations {
                values: x.values.iter().map(|v| v.max(0.0)).collect(),
                ..x.clone()
            },
            Step::MaxPool2 => Activations {
                values: x
                    .values
                    .chunks(c * h * w)
                    .flat_map(|img| max_pool2(img, [c, h, w]))
                    .collect(),
                batch,
                shape: [c, h / 2, w / 2],
            },
            Step::Flatten => Activations {
                shape: [c * h * w, 1, 1],
                ..x.clone()
            },
        }
    }

    /// The kernel of layer `layer` for a batch of `batch` from `source`.
    pub fn kernel(
        &self,
        source: &KernelSource,
        layer: usize,
        batch: usize,
    ) -> Result<Option<GpuDot>> {
        let Some(shape) = self.gemm_shape(layer, batch) else {
            return Ok(None);
        };
        GpuDot::new(self.arch, self.format, source.kernel(shape)?).map(Some)
    }

    /// Logits per image of one batch.
    pub fn forward(&self, source: &KernelSource, images: &[&[f32]]) -> Result<Vec<Vec<f32>>> {
        let mut x = self.input(images);
        for layer in 0..self.steps.len() {
            let kernel = self.kernel(source, layer, images.len())?;
            x = self.step(layer, &x, kernel.as_ref());
        }
        let per = x.values.len() / x.batch.max(1);
        Ok(x.values.chunks(per).map(<[f32]>::to_vec).collect())
    }
}

/// An image model on emulated GPU kernels, as an [`ImageRunner`].
pub struct GpuImage {
    platform: Platform,
    model: GpuModel,
    source: KernelSource,
}

impl GpuImage {
    pub fn new(
        platform: &Platform,
        arch: Arch,
        model: &ImageModel,
        source: KernelSource,
    ) -> Result<GpuImage> {
        let gpu = GpuModel::new(arch, platform.format, model)?;
        // Check every kernel this platform's batch size needs before anything runs.
        for layer in 0..gpu.layers() {
            gpu.kernel(&source, layer, platform.batch_size as usize)?;
        }
        Ok(GpuImage {
            platform: platform.clone(),
            model: gpu,
            source,
        })
    }
}

impl ImageRunner for GpuImage {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    fn forward(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>> {
        self.model.forward(&self.source, inputs)
    }
}
