//! The probe set a collection asks for: a number of seeded random probes shaped for the model, or a
//! probe-set file, checked to fit the model.

use std::path::Path;

use hspi_collect::{Model, ModelId};
use hspi_datasets::{ProbeInput, ProbeSet};

use crate::error::ProbeError;

/// SmolLM2's vocabulary, from which its random probes are drawn without reading its weights.
const SMOLLM2_VOCAB: u32 = 49152;
/// The length of a random language-model probe.
const LM_PROBE_TOKENS: usize = 12;

/// A language model's vocabulary size.
fn vocab(model: &Model) -> Result<u32, ProbeError> {
    Ok(model.vocab()?.unwrap_or_default() as u32)
}

/// `spec` is a count of seeded random probes or the path of a probe-set file.
pub fn for_model(model: &Model, spec: &str, seed: u64) -> Result<ProbeSet, ProbeError> {
    // Read once: a GGUF's metadata is parsed to know it.
    let vocab = match model {
        Model::Image(_) => 0,
        lm => vocab(lm)?,
    };
    let set = match spec.parse::<usize>() {
        Ok(0) => return Err(ProbeError::NoProbes),
        Ok(n) => match model {
            Model::Image(m) => crate::random_images(seed, n, m.input_shape),
            _ => crate::random_tokens(seed, n, vocab, LM_PROBE_TOKENS),
        },
        Err(_) => crate::read_probe_set(Path::new(spec))?,
    };
    for p in &set.probes {
        let fits = match (&p.input, model) {
            (ProbeInput::Image { pixels, .. }, Model::Image(m)) => pixels.len() == m.input_len(),
            (ProbeInput::Tokens { ids }, Model::Lm { .. } | Model::Tiny(_)) => {
                !ids.is_empty() && ids.iter().all(|i| *i < vocab)
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
/// or the path of a probe-set file (the endpoint session checks that it holds prompts).
pub fn prompts_for(
    spec: &str,
    seed: u64,
    max_tokens: u32,
    top_logprobs: u32,
) -> Result<ProbeSet, ProbeError> {
    match spec.parse::<usize>() {
        Ok(0) => Err(ProbeError::NoProbes),
        Ok(n) => Ok(crate::prompts(seed, n, max_tokens, top_logprobs)),
        Err(_) => crate::read_probe_set(Path::new(spec)),
    }
}

/// `count` seeded random probes for a model; only its input shape matters, so SmolLM2 needs no
/// weights.
pub fn random_for(id: ModelId, count: usize, seed: u64) -> Result<ProbeSet, ProbeError> {
    match id {
        ModelId::SmolLm2 => Ok(crate::random_tokens(
            seed,
            count,
            SMOLLM2_VOCAB,
            LM_PROBE_TOKENS,
        )),
        _ => for_model(&Model::load(id, None)?, &count.to_string(), seed),
    }
}

/// Numeric-stress probes: images (saturated, bf16 rounding midpoints, near-cancelling) for image
/// models; for the tiny LM, prompts whose top-2 next-token logits are nearest a tie.
pub fn stress_for(id: ModelId, count: usize, seed: u64) -> Result<ProbeSet, ProbeError> {
    match Model::load(id, None)? {
        Model::Image(m) => Ok(crate::stress_images(seed, count, m.input_shape)),
        Model::Tiny(lm) => {
            // Ten candidates per prompt kept, scored on the f32 reference.
            let candidates = crate::prompts(seed, count * 10, 8, 5);
            let f32 = hspi_datasets::NumericFormat::F32;
            let runner = hspi_collect::backend::TinyLmRunner::new(&lm, f32)?;
            Ok(crate::near_tie::near_tied(&lm, &runner, &candidates, count)?)
        }
        Model::Lm { .. } => Err(ProbeError::Unusable {
            what: id.name().into(),
            reason: format!("near-tie prompt selection needs the model's tokenizer; {} has none in hspi yet (use tiny-lm)", id.name()),
        }),
    }
}

/// An audit pool: the prompts of several probe-set files (each once, in order), or `count`
/// generated prompts of 8 tokens with 5 logprob alternatives when no file is given.
pub fn union_of(
    files: &[std::path::PathBuf],
    count: usize,
    seed: u64,
) -> Result<ProbeSet, ProbeError> {
    if files.is_empty() {
        return prompts_for(&count.to_string(), seed, 8, 5);
    }
    let mut seen = std::collections::HashSet::new();
    let mut union = ProbeSet {
        generator: String::new(),
        seed,
        probes: Vec::new(),
    };
    let mut generators = Vec::new();
    for f in files {
        let set = crate::read_probe_set(f)?;
        generators.push(format!("{} seed {}", set.generator, set.seed));
        union
            .probes
            .extend(set.probes.into_iter().filter(|p| seen.insert(p.id.clone())));
    }
    union.generator = format!("union of {}", generators.join(", "));
    Ok(union)
}
