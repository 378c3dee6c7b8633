//! Targets answer probes. A local target is a zoo model on a backend at a platform; HTTP
//! endpoints are targets too. The collector sees only this trait.

use hspi_datasets::{
    AskedAs, LogitBits, Outputs, Platform, Probe, ProbeInput, Record, Served, Usage,
};

use crate::backend::{self, Batch, Runner};
use crate::error::{CollectError, Result};
use crate::zoo::Model;

pub trait Target {
    /// Stable identity, stored in every record (`local:MODEL@PLATFORM`, or an endpoint).
    fn id(&self) -> &str;
    fn platform(&self) -> Option<&Platform>;
    /// How its prompts reach the model (an endpoint's API shape says; hspi's own computation is
    /// `Local`), kept in every record.
    fn asked_as(&self) -> AskedAs;
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
        asked_as: AskedAs,
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
            asked_as: Some(asked_as),
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
    backend::check(model, platform)
}

/// Open `model` at `platform` on its backend.
pub fn open_local(model: &Model, platform: &Platform) -> Result<Box<dyn Target>> {
    Ok(Box::new(LocalTarget {
        id: local_target_id(&model.info().id, platform),
        input_len: match model {
            Model::Image(m) => Some(m.input_len()),
            _ => None,
        },
        runner: backend::open(model, platform)?,
    }))
}

/// `model` at a GPU platform reproduced on this CPU from its kernel plan.
pub fn open_emulated(
    model: &Model,
    plan: &crate::backend::emulated::KernelPlan,
) -> Result<Box<dyn Target>> {
    Ok(Box::new(LocalTarget {
        id: local_target_id(&model.info().id, &plan.platform),
        input_len: match model {
            Model::Image(m) => Some(m.input_len()),
            _ => None,
        },
        runner: backend::open_plan(model, plan)?,
    }))
}

/// A zoo model on a backend's runner.
struct LocalTarget {
    id: String,
    /// Pixels per image for an image model; None for a language model (token ids).
    input_len: Option<usize>,
    runner: Box<dyn Runner>,
}

impl Target for LocalTarget {
    fn id(&self) -> &str {
        &self.id
    }
    fn platform(&self) -> Option<&Platform> {
        Some(self.runner.platform())
    }
    fn asked_as(&self) -> AskedAs {
        AskedAs::Local
    }
    fn batch_size(&self) -> usize {
        self.runner.batch_size()
    }
    fn batches_per_call(&self) -> usize {
        self.runner.batches_per_call()
    }
    fn answer(&mut self, probes: &[&Probe]) -> Result<Vec<Answer>> {
        let logits = match self.input_len {
            Some(len) => {
                let images = probes
                    .iter()
                    .map(|p| image_pixels(p, len, &self.id))
                    .collect::<Result<Vec<&[f32]>>>()?;
                self.runner.forward(Batch::Images(&images))?
            }
            None => {
                let prompts = probes
                    .iter()
                    .map(|p| token_ids(p, &self.id))
                    .collect::<Result<Vec<&[u32]>>>()?;
                self.runner.forward(Batch::Tokens(&prompts))?
            }
        };
        Ok(logits.iter().map(|v| logits_answer(v)).collect())
    }
}

/// An image probe's pixels, or why the probe does not fit.
fn image_pixels<'a>(probe: &'a Probe, len: usize, target: &str) -> Result<&'a [f32]> {
    match &probe.input {
        ProbeInput::Image { pixels, .. } if pixels.len() == len => Ok(pixels),
        other => Err(CollectError::ProbeMismatch {
            probe: probe.id.clone(),
            model: target.to_string(),
            reason: format!("expected an image of {len} pixels, got {}", describe(other)),
        }),
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
