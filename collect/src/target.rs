//! Targets answer probes. A local target is a zoo model on a backend at a platform; HTTP
//! endpoints are targets too. The collector sees only this trait.

use hspi_datasets::{
    EngineKind, Hardware, LogitBits, NumericFormat, Outputs, Platform, Probe, ProbeInput, Record,
    Served, Usage,
};

use crate::backend::{image_backend, CudaLm, ImageBackend};
use crate::error::{CollectError, Result};
use crate::zoo::{smollm2, Model, QuantizedLm, TinyLmRunner};

pub trait Target {
    /// Stable identity, stored in every record (`local:MODEL@PLATFORM`, or an endpoint).
    fn id(&self) -> &str;
    fn platform(&self) -> Option<&Platform>;
    /// How many probes one call answers together (the platform's batch size).
    fn batch_size(&self) -> usize;
    /// How many batches one `answer` call may take: a target that computes independent batches
    /// on several cores splits them itself, each still at the platform's batch size.
    fn batches_per_call(&self) -> usize {
        1
    }
    fn answer(&mut self, probes: &[&Probe]) -> Result<Vec<Answer>>;
}

/// One probe's answer: the outputs, and what the target reported about the call.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub outputs: Outputs,
    pub usage: Option<Usage>,
    pub served_model: Option<String>,
    pub system_fingerprint: Option<String>,
}

impl Answer {
    /// The record of this answer: the one place a record is built from what a target returned.
    pub fn into_record(
        self,
        probe_id: &str,
        target: &str,
        platform: Option<Platform>,
        timing_us: u64,
    ) -> Record {
        Record {
            probe_id: probe_id.to_string(),
            target: target.to_string(),
            platform,
            outputs: self.outputs,
            timing_us,
            usage: self.usage,
            served: Served::from_answer(self.served_model, self.system_fingerprint),
        }
    }
}

impl From<Outputs> for Answer {
    fn from(outputs: Outputs) -> Answer {
        Answer {
            outputs,
            usage: None,
            served_model: None,
            system_fingerprint: None,
        }
    }
}

pub fn local_target_id(model: &str, platform: &Platform) -> String {
    format!("local:{model}@{platform}")
}

/// Whether this machine can run `model` at `platform`, without loading anything heavy.
pub fn check_local(model: &Model, platform: &Platform) -> Result<()> {
    match model {
        // A GPU backend compiles kernels and uploads weights: checked without building one.
        Model::Image(m) if platform.is_cuda() => crate::backend::cuda_check(platform, &m.id),
        Model::Image(m) => image_backend(platform, m).map(drop),
        Model::Tiny(_) => check_candle_lm(platform, "tiny-lm", &crate::grid::tiny_lm_formats()),
        Model::Lm { info, .. } => check_candle_lm(platform, &info.id, &smollm2::formats()),
    }
}

/// On a GPU, language models run on hspi's cuBLAS + NVRTC backend (GGUF llama models only).
fn check_cuda_lm(platform: &Platform, model: &str) -> Result<()> {
    if model == "tiny-lm" {
        return Err(CollectError::Unsupported {
            platform: platform.to_string(),
            model: model.into(),
            reason: "the GPU backend runs GGUF llama models (smollm2), not tiny-lm".into(),
        });
    }
    crate::backend::cuda_check(platform, model)
}

/// Language models run on candle's own CPU kernels at batch size 1, at the formats given;
/// on a GPU at the cuBLAS precisions and any batch size.
fn check_candle_lm(platform: &Platform, model: &str, formats: &[NumericFormat]) -> Result<()> {
    let unsupported = |reason: String| CollectError::Unsupported {
        platform: platform.to_string(),
        model: model.to_string(),
        reason,
    };
    if platform.is_cuda() {
        return check_cuda_lm(platform, model);
    }
    let here = hspi_datasets::provenance::isa_path();
    if !matches!(&platform.hardware, Hardware::Cpu { isa } if isa == here) {
        return Err(unsupported(format!(
            "this machine runs cpu-{here} platforms only"
        )));
    }
    if platform.engine.kind != EngineKind::Candle || platform.kernel.is_some() {
        return Err(unsupported(
            "language models run on candle's own kernels only".into(),
        ));
    }
    if platform.batch_size != 1 {
        return Err(unsupported(
            "language-model collection runs at batch size 1".into(),
        ));
    }
    if !formats.contains(&platform.format) {
        let list: Vec<String> = formats.iter().map(|f| f.to_string()).collect();
        return Err(unsupported(format!(
            "formats for this model: {}",
            list.join(" ")
        )));
    }
    Ok(())
}

/// Open `model` at `platform`. Image backends validate the platform while being built, so the
/// backend is built once here; language models are checked before their weights load.
pub fn open_local(model: &Model, platform: &Platform) -> Result<Box<dyn Target>> {
    if !matches!(model, Model::Image(_)) {
        check_local(model, platform)?;
    }
    let id = local_target_id(&model.info().id, platform);
    Ok(match model {
        Model::Image(m) => Box::new(LocalImage {
            id,
            model: m.id.clone(),
            input_len: m.input_len(),
            batch_size: platform.batch_size as usize,
            backends: (0..image_workers(platform))
                .map(|_| image_backend(platform, m))
                .collect::<Result<_>>()?,
        }),
        Model::Lm { path, .. } if platform.is_cuda() => Box::new(GpuLm {
            id,
            lm: CudaLm::load(path, platform)?,
        }),
        Model::Lm { path, .. } => Box::new(LocalLm {
            id,
            platform: platform.clone(),
            lm: Lm::Gguf(QuantizedLm::load(path, platform.format)?),
        }),
        Model::Tiny(lm) => Box::new(LocalLm {
            id,
            platform: platform.clone(),
            lm: Lm::Tiny(TinyLmRunner::new(
                lm,
                crate::grid::candle_dtype(platform.format),
            )?),
        }),
    })
}

/// CPU image platforms compute independent batches on every core when their kernels run on one
/// thread (as `hspi collect` sets them): the same bits per input, several inputs at once. Kernel
/// threads or batch workers, never both; a GPU platform gets one worker.
fn image_workers(platform: &Platform) -> usize {
    let single_threaded_kernels = std::env::var("RAYON_NUM_THREADS").is_ok_and(|n| n.trim() == "1");
    if platform.is_cuda() || !single_threaded_kernels {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

struct LocalImage {
    id: String,
    model: String,
    input_len: usize,
    batch_size: usize,
    /// One backend per worker thread.
    backends: Vec<Box<dyn ImageBackend>>,
}

impl Target for LocalImage {
    fn id(&self) -> &str {
        &self.id
    }
    fn platform(&self) -> Option<&Platform> {
        Some(self.backends[0].platform())
    }
    fn batch_size(&self) -> usize {
        self.batch_size
    }
    fn batches_per_call(&self) -> usize {
        match self.backends.len() {
            1 => 1,
            // Enough inputs per worker that starting its thread costs little (a CNN forward
            // pass takes ~30 µs), few enough that a call stays short.
            workers => workers * (64 / self.batch_size.max(1)).max(1),
        }
    }
    fn answer(&mut self, probes: &[&Probe]) -> Result<Vec<Answer>> {
        let mut inputs = Vec::with_capacity(probes.len());
        for p in probes {
            match &p.input {
                ProbeInput::Image { pixels, .. } if pixels.len() == self.input_len => {
                    inputs.push(pixels.as_slice())
                }
                other => {
                    return Err(CollectError::ProbeMismatch {
                        probe: p.id.clone(),
                        model: self.model.clone(),
                        reason: format!(
                            "expected an image of {} pixels, got {}",
                            self.input_len,
                            describe(other)
                        ),
                    })
                }
            }
        }
        Ok(self
            .forward(&inputs)?
            .into_iter()
            .map(|v| {
                Outputs::Logits {
                    values: LogitBits::from_f32(&v),
                }
                .into()
            })
            .collect())
    }
}

impl LocalImage {
    /// Platform-sized batches, spread over the workers in contiguous runs; outputs in input order.
    fn forward(&mut self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>> {
        let bs = self.batch_size.max(1);
        let run = |backend: &dyn ImageBackend, part: &[&[f32]]| -> Result<Vec<Vec<f32>>> {
            let mut out = Vec::with_capacity(part.len());
            for batch in part.chunks(bs) {
                out.extend(backend.forward(batch)?);
            }
            Ok(out)
        };
        let batches = inputs.len().div_ceil(bs);
        if self.backends.len() == 1 || batches <= 1 {
            return run(self.backends[0].as_ref(), inputs);
        }
        let per_worker = batches.div_ceil(self.backends.len()) * bs;
        std::thread::scope(|scope| {
            let parts: Vec<_> = self
                .backends
                .iter_mut()
                .zip(inputs.chunks(per_worker))
                .map(|(backend, part)| scope.spawn(move || run(backend.as_ref(), part)))
                .collect();
            let mut out = Vec::with_capacity(inputs.len());
            for part in parts {
                out.extend(part.join().expect("a forward pass does not panic")?);
            }
            Ok(out)
        })
    }
}

enum Lm {
    Gguf(QuantizedLm),
    Tiny(TinyLmRunner),
}

struct LocalLm {
    id: String,
    platform: Platform,
    lm: Lm,
}

impl Target for LocalLm {
    fn id(&self) -> &str {
        &self.id
    }
    fn platform(&self) -> Option<&Platform> {
        Some(&self.platform)
    }
    fn batch_size(&self) -> usize {
        1
    }
    fn answer(&mut self, probes: &[&Probe]) -> Result<Vec<Answer>> {
        probes
            .iter()
            .map(|p| {
                let ids = token_ids(p, &self.id)?;
                let logits = match &mut self.lm {
                    Lm::Gguf(lm) => lm.next_token_logits(ids)?,
                    Lm::Tiny(lm) => lm.next_token_logits(ids)?,
                };
                Ok(logits_answer(&logits))
            })
            .collect()
    }
}

/// A language model on the GPU, answering a platform-sized batch of prompts per call.
struct GpuLm {
    id: String,
    lm: CudaLm,
}

impl Target for GpuLm {
    fn id(&self) -> &str {
        &self.id
    }
    fn platform(&self) -> Option<&Platform> {
        Some(self.lm.platform())
    }
    fn batch_size(&self) -> usize {
        self.lm.platform().batch_size as usize
    }
    fn answer(&mut self, probes: &[&Probe]) -> Result<Vec<Answer>> {
        let prompts = probes
            .iter()
            .map(|p| token_ids(p, &self.id))
            .collect::<Result<Vec<&[u32]>>>()?;
        Ok(self
            .lm
            .next_token_logits(&prompts)?
            .iter()
            .map(|v| logits_answer(v))
            .collect())
    }
}

/// A language-model probe's token ids, or why the probe does not fit.
fn token_ids<'a>(probe: &'a Probe, target: &str) -> Result<&'a [u32]> {
    match &probe.input {
        ProbeInput::Tokens { ids } if !ids.is_empty() => Ok(ids),
        other => Err(CollectError::ProbeMismatch {
            probe: probe.id.clone(),
            model: target.to_string(),
            reason: format!("expected token ids, got {}", describe(other)),
        }),
    }
}

fn logits_answer(logits: &[f32]) -> Answer {
    Outputs::Logits {
        values: LogitBits::from_f32(logits),
    }
    .into()
}

fn describe(input: &ProbeInput) -> String {
    match input {
        ProbeInput::Image { pixels, .. } => format!("an image of {} pixels", pixels.len()),
        ProbeInput::Tokens { ids } => format!("{} token ids", ids.len()),
        ProbeInput::Prompt { .. } => "a text prompt".into(),
    }
}
