//! The model's own rules: "another model" once its evidence passes the format evidence's
//! accusing threshold, and every other verdict held while it leans that way.

use hspi_datasets::Dimension;

use super::{Verdict, Verifier};
use crate::dimension_verdict::{DimensionStatus, DimensionVerdict};

impl Verifier<'_> {
    /// The model's own accusing threshold: the format evidence's (one capped answer beyond
    /// Wald's), as its scores are bounded the same way.
    pub(super) fn model_accuse(&self) -> f64 {
        self.params.format_accuse_threshold()
    }

    /// "Another model": the answers lie beyond every format and engine of the claimed model.
    pub(super) fn model_mismatch(&self) -> Option<Verdict> {
        (self.model_tally.total >= self.model_accuse()).then(|| Verdict::Mismatch {
            likely_class: String::new(),
            likely_platform: format!(
                "another model: the answers are not {} in any format hspi knows ({})",
                self.model.model.id,
                self.model_tally.describe()
            ),
            dimensions: vec![Dimension::Model],
        })
    }

    /// Whether the model's evidence leans towards another model: no format or platform is
    /// named, nor the claim confirmed, until it settles.
    pub(super) fn model_unsettled(&self) -> bool {
        self.model_tally.total > 0.0
    }

    /// The verdict on the model itself, once any answer was measured.
    pub(super) fn model_verdict(&self) -> Option<DimensionVerdict> {
        if self.model_tally.answers() == 0 {
            return None;
        }
        let (_, accept) = self.params.thresholds();
        let total = self.model_tally.total;
        let status = if total >= self.model_accuse() {
            DimensionStatus::Mismatch
        } else if total <= accept {
            DimensionStatus::Consistent
        } else {
            DimensionStatus::Inconclusive
        };
        Some(DimensionVerdict {
            dimension: Dimension::Model,
            claimed: self.model.model.id.clone(),
            status,
            nearest: if status == DimensionStatus::Mismatch {
                "another model".into()
            } else {
                self.model.model.id.clone()
            },
            log_likelihood_ratio: Some(total),
            note: Some(self.model_tally.describe()),
            unseen: false,
        })
    }
}
