//! The verifier's parameters: the error rates it is held to, its budget, and the thresholds
//! they give.

use serde::{Deserialize, Serialize};

use crate::error::ClassifyError;
use crate::identify::PER_QUERY_CAP;
use crate::sources::format_evidence::FORMAT_CAP;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyParams {
    /// Target probability of calling an honest server a mismatch.
    pub false_accusation: f64,
    /// Target probability of calling a mismatched server consistent.
    pub false_acceptance: f64,
    pub max_queries: usize,
    pub max_output_tokens: u64,
    /// No verdict but "inconclusive" before this many queries.
    pub min_queries: usize,
    /// Most log-likelihood one answer can contribute (nats).
    pub per_query_cap: f64,
    /// The least share of requests routed to another format the audit must be able to see
    /// before it calls the provider consistent (`verify::routing`); None: not waited for.
    #[serde(default)]
    pub routed_share: Option<f64>,
}

impl Default for VerifyParams {
    fn default() -> Self {
        VerifyParams {
            false_accusation: 0.01,
            false_acceptance: 0.01,
            max_queries: 32,
            max_output_tokens: 256,
            min_queries: 2,
            per_query_cap: PER_QUERY_CAP,
            routed_share: None,
        }
    }
}

impl VerifyParams {
    pub fn validate(&self) -> Result<(), ClassifyError> {
        for (name, v) in [
            ("--false-accusation", self.false_accusation),
            ("--false-acceptance", self.false_acceptance),
        ] {
            if !(v > 0.0 && v < 0.5) {
                return Err(ClassifyError::Param(format!(
                    "{name} {v}: must lie in (0, 0.5)"
                )));
            }
        }
        if let Some(share) = self.routed_share.filter(|s| !(*s > 0.0 && *s < 1.0)) {
            return Err(ClassifyError::Param(format!(
                "--routed-share {share}: must lie in (0, 1)"
            )));
        }
        if self.max_queries == 0 || self.min_queries == 0 || self.min_queries > self.max_queries {
            return Err(ClassifyError::Param(format!(
                "query limits: need 1 <= min ({}) <= max ({})",
                self.min_queries, self.max_queries
            )));
        }
        Ok(())
    }
    /// Wald's thresholds on the log-likelihood ratio (alternative against claim).
    pub fn thresholds(&self) -> (f64, f64) {
        let (a, b) = (self.false_accusation, self.false_acceptance);
        (((1.0 - b) / a).ln(), (b / (1.0 - a)).ln())
    }

    /// The format evidence's accusing threshold: one capped answer beyond Wald's. That evidence
    /// is a bounded model of engines hspi never ran, not a calibrated likelihood: at Wald's
    /// threshold alone, PyTorch's fp16 under load was accused in 1 of 200 audits against
    /// llama.cpp references (datasets/atlas/transformers-cpu); one answer more removed that and
    /// caught every measured substitution as before.
    pub fn format_accuse_threshold(&self) -> f64 {
        self.thresholds().0 + FORMAT_CAP
    }
}
