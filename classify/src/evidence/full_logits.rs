//! White-box evidence: the full output vector, every bit of every logit. Bit-identical means every
//! logit's bits; no API sits in between, so no integrity check applies.

use hspi_datasets::Outputs;

use super::EvidenceMode;
use crate::features::FeatureKind;
use crate::integrity::Check;

pub struct FullLogits;

impl EvidenceMode for FullLogits {
    fn name(&self) -> &'static str {
        "full-logits"
    }
    fn output_kind(&self) -> &'static str {
        "logits"
    }
    fn carries(&self, outputs: &Outputs) -> bool {
        matches!(outputs, Outputs::Logits { .. })
    }
    fn integrity_checks(&self) -> &'static [Check] {
        &[]
    }
    fn default_features(&self) -> Vec<FeatureKind> {
        vec![
            FeatureKind::ReferenceRelative,
            FeatureKind::MantissaHistogram,
        ]
    }
    fn baseline_features(&self) -> Vec<FeatureKind> {
        vec![FeatureKind::Bits]
    }
}
