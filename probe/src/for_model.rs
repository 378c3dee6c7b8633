//! The probe set a collection asks for: a number of seeded random probes shaped for the model, or a
//! probe-set file, checked to fit the model.

use std::path::Path;

use hspi_collect::Model;
use hspi_datasets::{ProbeInput, ProbeSet};

use crate::error::ProbeError;

/// Token ids drawn for random language-model probes, and their length.
const LM_VOCAB: u32 = 49152;
const LM_PROBE_TOKENS: usize = 12;

/// `spec` is a count of seeded random probes or the path of a probe-set file.
pub fn for_model(model: &Model, spec: &str, seed: u64) -> Result<ProbeSet, ProbeError> {
    let set = match spec.parse::<usize>() {
        Ok(0) => return Err(ProbeError::NoProbes),
        Ok(n) => match model {
            Model::Image(m) => crate::random_images(seed, n, m.input_shape),
            Model::Lm { .. } => crate::random_tokens(seed, n, LM_VOCAB, LM_PROBE_TOKENS),
            Model::Tiny(lm) => {
                crate::random_tokens(seed, n, lm.vocab.len() as u32, LM_PROBE_TOKENS)
            }
        },
        Err(_) => crate::read_probe_set(Path::new(spec))?,
    };
    for p in &set.probes {
        let fits = match (&p.input, model) {
            (ProbeInput::Image { pixels, .. }, Model::Image(m)) => pixels.len() == m.input_len(),
            (ProbeInput::Tokens { ids }, Model::Lm { .. }) => !ids.is_empty(),
            (ProbeInput::Tokens { ids }, Model::Tiny(lm)) => {
                !ids.is_empty() && ids.iter().all(|i| (*i as usize) < lm.vocab.len())
            }
            _ => false,
        };
        if !fits {
            return Err(ProbeError::DoesNotFit {
                probe: p.id.clone(),
                spec: spec.into(),
                model: model.info().id,
            });
        }
    }
    Ok(set)
}

/// Endpoint prompts: `spec` is a count of generated prompts (`max_tokens`, `top_logprobs` each)
/// or the path of a probe-set file of prompts.
pub fn prompts_for(
    spec: &str,
    seed: u64,
    max_tokens: u32,
    top_logprobs: u32,
) -> Result<ProbeSet, ProbeError> {
    let set = match spec.parse::<usize>() {
        Ok(0) => return Err(ProbeError::NoProbes),
        Ok(n) => crate::prompts(seed, n, max_tokens, top_logprobs),
        Err(_) => crate::read_probe_set(Path::new(spec))?,
    };
    if let Some(p) = set
        .probes
        .iter()
        .find(|p| !matches!(p.input, ProbeInput::Prompt { .. }))
    {
        return Err(ProbeError::NotAPrompt {
            probe: p.id.clone(),
            spec: spec.into(),
        });
    }
    Ok(set)
}
