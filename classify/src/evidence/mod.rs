//! Evidence modes: what an endpoint's answers carry, and so what can be concluded from them. A mode
//! says what "bit-identical" means for its answers, which integrity checks apply, and which
//! features fit. One mode per file; [`modes`] is the one registration point. To add one, copy
//! exact_logprobs.rs and add one line to [`modes`] (CONTRIBUTING.md). How an endpoint shows a
//! mode's answers (rounded to a grid, text alone) is no mode of its own: it is read from each
//! answer (`hspi_datasets::Presentation`) and the references are shown the same way.

mod exact_logprobs;
mod full_logits;

pub use exact_logprobs::ExactLogprobs;
pub use full_logits::FullLogits;

use hspi_datasets::{Outputs, Record};

use crate::error::ClassifyError;
use crate::features::FeatureKind;
use crate::integrity::Check;

pub trait EvidenceMode: Sync {
    /// The name reports and `--evidence` use, e.g. `exact-logprobs`.
    fn name(&self) -> &'static str;
    /// The feature spec's output kind this mode reads (`logits` or `steps`).
    fn output_kind(&self) -> &'static str;
    /// Whether one answer is of this mode.
    fn carries(&self, outputs: &Outputs) -> bool;
    /// The bytes that define bit-identity of two answers in this mode.
    fn identity_bytes(&self, outputs: &Outputs) -> Vec<u8> {
        outputs.identity_bytes()
    }
    /// The integrity properties every honest engine's answers keep in this mode.
    fn integrity_checks(&self) -> &'static [Check];
    /// hspi's default features for it.
    fn default_features(&self) -> Vec<FeatureKind>;
    /// The HSPI paper's own features for it (the baseline in `hspi eval`).
    fn baseline_features(&self) -> Vec<FeatureKind>;
}

/// Every evidence mode, most informative first.
pub fn modes() -> &'static [&'static dyn EvidenceMode] {
    &[&FullLogits, &ExactLogprobs]
}

/// The mode of a set of answers: the first mode that carries any of them.
pub fn detect(records: &[Record]) -> Result<&'static dyn EvidenceMode, ClassifyError> {
    modes()
        .iter()
        .copied()
        .find(|m| records.iter().any(|r| m.carries(&r.outputs)))
        .ok_or_else(|| ClassifyError::NoEvidenceMode)
}

/// What bit-identity of one answer is: the bytes its evidence mode compares (the outputs'
/// own identity bytes when no mode carries them).
pub fn identity_bytes(outputs: &Outputs) -> Vec<u8> {
    match modes().iter().find(|m| m.carries(outputs)) {
        Some(mode) => mode.identity_bytes(outputs),
        None => outputs.identity_bytes(),
    }
}

/// The mode a trained model's features read (its spec's output kind).
pub fn for_output_kind(kind: &str) -> Result<&'static dyn EvidenceMode, ClassifyError> {
    modes()
        .iter()
        .copied()
        .find(|m| m.output_kind() == kind)
        .ok_or_else(|| ClassifyError::UnknownOutputKind {
            kind: kind.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hspi_datasets::{LogitBits, Logprob, TokenStep, TopEntry};

    fn answers() -> Vec<Outputs> {
        let lp = |v: f32| Logprob::parse(&format!("{:.17e}", v as f64)).unwrap();
        vec![
            Outputs::Logits {
                values: LogitBits::from_f32(&[1.0, -2.0]),
            },
            Outputs::Completion {
                text: "a".into(),
                steps: vec![TokenStep {
                    token: "a".into(),
                    id: Some(1),
                    bytes: None,
                    logprob: Some(lp(-0.5)),
                    top: vec![TopEntry {
                        token: "a".into(),
                        id: Some(1),
                        logprob: lp(-0.5),
                    }],
                }],
                finish_reason: None,
            },
        ]
    }

    #[test]
    fn every_mode_reads_its_answers_and_names_its_features() {
        for mode in modes() {
            let all = answers();
            let mine: Vec<&Outputs> = all.iter().filter(|o| mode.carries(o)).collect();
            assert_eq!(mine.len(), 1, "{}: one sample answer each", mode.name());
            assert!(!mode.identity_bytes(mine[0]).is_empty(), "{}", mode.name());
            assert!(!mode.default_features().is_empty(), "{}", mode.name());
            assert!(!mode.baseline_features().is_empty(), "{}", mode.name());
            assert_eq!(
                for_output_kind(mode.output_kind()).unwrap().name(),
                mode.name()
            );
        }
        assert!(for_output_kind("smoke").is_err());
    }
}
