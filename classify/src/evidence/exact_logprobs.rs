//! Black-box evidence with exact logprobs: an endpoint prints each generated token's logprob and
//! its top alternatives as exact f32 values (llama.cpp prints 17 digits), so their bits are
//! recovered. Bit-identical means the text and every printed logprob's f32 bits. Answers keep
//! every integrity property; one that breaks a property every known class keeps was altered.

use hspi_datasets::Outputs;

use super::EvidenceMode;
use crate::features::FeatureKind;
use crate::integrity::Check;

pub struct ExactLogprobs;

impl EvidenceMode for ExactLogprobs {
    fn name(&self) -> &'static str {
        "exact-logprobs"
    }
    fn output_kind(&self) -> &'static str {
        "steps"
    }
    fn carries(&self, outputs: &Outputs) -> bool {
        matches!(outputs, Outputs::Completion { .. })
    }
    fn integrity_checks(&self) -> &'static [Check] {
        &[
            Check::NonPositive,
            Check::ExactF32,
            Check::SampledMatchesTop,
            Check::Sorted,
        ]
    }
    fn default_features(&self) -> Vec<FeatureKind> {
        // ulp-pattern overfits the few hundred answers a black-box grid has (97.5 % against
        // 100 % at one query on the llama.cpp grid), so API answers use the summaries alone.
        vec![FeatureKind::ReferenceRelative, FeatureKind::LogprobStats]
    }
    fn baseline_features(&self) -> Vec<FeatureKind> {
        vec![FeatureKind::Sem]
    }
}
