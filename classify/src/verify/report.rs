//! What a verification finds: the verdict, each answer's evidence, the report and its exit code.

use hspi_datasets::Dimension;
use serde::{Deserialize, Serialize};

use super::routed_share::RoutedShare;
use crate::dimension_verdict::{DimensionStatus, DimensionVerdict};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Consistent,
    Mismatch {
        likely_class: String,
        likely_platform: String,
        /// The claimed dimensions on which every member of the likely class differs from the
        /// claim (older reports have none).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        dimensions: Vec<Dimension>,
    },
    UnknownPlatform {
        reason: String,
    },
    Inconclusive {
        reason: String,
    },
    Tampered {
        reason: String,
    },
    /// The answers come from more than one format, one of them off the claim: a provider
    /// routing a share of its requests elsewhere (`verify::routing`).
    Mixed {
        /// Per format the answers settled, its share with a 95 % interval.
        routes: Vec<RoutedShare>,
        /// Answers settled as some one format, and those that settled none.
        settled: usize,
        unsettled: usize,
    },
}

impl Verdict {
    /// Exit codes as in DESIGN.md: 0 consistent, 3 inconclusive, 4 unknown platform (nothing
    /// accused), 1 mismatch, tampered or mixed (an accusation).
    pub fn exit_code(&self) -> u8 {
        match self {
            Verdict::Consistent => 0,
            Verdict::Inconclusive { .. } => 3,
            Verdict::UnknownPlatform { .. } => 4,
            Verdict::Mismatch { .. } | Verdict::Tampered { .. } | Verdict::Mixed { .. } => 1,
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Consistent => "consistent",
            Verdict::Mismatch { .. } => "mismatch",
            Verdict::UnknownPlatform { .. } => "unknown platform",
            Verdict::Inconclusive { .. } => "inconclusive",
            Verdict::Tampered { .. } => "tampered",
            Verdict::Mixed { .. } => "mixed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryEvidence {
    pub probe: String,
    pub output_tokens: u64,
    /// `exact-match`, `reference-match` or `classifier`.
    pub method: String,
    /// The class this answer alone points to.
    pub nearest: String,
    /// This answer's log-likelihood ratio, best alternative against best claimed class.
    pub llr: f64,
    pub cumulative_llr: f64,
    /// Posterior over the model's classes after this answer (uniform prior), in
    /// [`VerifyReport::classes`] order.
    #[serde(default)]
    pub posterior: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub integrity: Vec<String>,
    /// The format's own log-likelihood ratio after this answer (best format off the claim
    /// against the claimed one), where the format is weighed on evidence of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_llr: Option<f64>,
    /// The model's evidence after this answer (another model against the claimed one, nats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_llr: Option<f64>,
    /// The format this answer alone settles, where it settles one (`verify::routing`): the
    /// deployment its request was routed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    pub claim: String,
    pub claimed: Vec<String>,
    pub alternatives: Vec<String>,
    /// Every class of the model (`id platform`), the order of each evidence's posterior.
    #[serde(default)]
    pub classes: Vec<String>,
    pub verdict: Verdict,
    /// Probability the verdict is right under the model (1 − the error rate it was held to,
    /// or the posterior share when the budget ran out).
    pub confidence: f64,
    pub log_likelihood_ratio: f64,
    /// (mismatch at or above, consistent at or below)
    pub thresholds: (f64, f64),
    /// The format's own thresholds (mismatch at or above, consistent at or below), where the
    /// format is weighed on evidence of its own (`QueryEvidence::format_llr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_thresholds: Option<(f64, f64)>,
    pub queries: usize,
    pub output_tokens: u64,
    /// How the endpoint showed its answers, when not as exact logprobs ("logprobs rounded to
    /// fp16", "text only (no logprobs)"): the references were shown the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presentation: Option<String>,
    /// Why the audit stopped before the evidence sufficed, where the endpoint went down (prompts
    /// in a row unanswered after every retry): the verdict stands on the answers received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_down: Option<String>,
    /// Why the audit stopped before the evidence sufficed, where the auditor's own spending cap
    /// (`--max-requests`, `--max-output-tokens`, `--max-cost`) would have been passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spending_cap: Option<String>,
    /// The verdict on each claimed dimension (reports written before it have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dimensions: Vec<DimensionVerdict>,
    pub evidence: Vec<QueryEvidence>,
}

/// The exit code of an audit whose endpoint went down before the evidence sufficed (no
/// accusation stands): the answers received are kept, and nothing was decided about the claim.
pub const ENDPOINT_DOWN_EXIT: u8 = 5;

impl VerifyReport {
    /// The endpoint went down (`why`) before the evidence sufficed: said in the verdict where it
    /// is inconclusive, and in the exit code unless an accusation stands.
    pub fn went_down(&mut self, why: String) {
        if let Verdict::Inconclusive { reason } = &mut self.verdict {
            *reason = format!("{why}; with those: {reason}");
        }
        self.endpoint_down = Some(why);
    }

    /// The auditor's spending cap was reached (`why`) before the evidence sufficed: said in the
    /// verdict where it is inconclusive; the answers before it stand.
    pub fn spending_cap_reached(&mut self, why: String) {
        if let Verdict::Inconclusive { reason } = &mut self.verdict {
            *reason = format!("{why}; with the answers before it: {reason}");
        }
        self.spending_cap = Some(why);
    }

    /// The exit code of the worst of the overall verdict and the claimed dimensions (an
    /// accusation, 1, over unknown, 4, over inconclusive, 3, over consistent, 0), so a
    /// dimension found wrong or unknown shows even where the overall test stopped short of it.
    /// An endpoint that went down before the evidence sufficed exits
    /// [`ENDPOINT_DOWN_EXIT`] unless an accusation stands.
    pub fn exit_code(&self) -> u8 {
        let worst = self.worst_exit_code();
        if self.endpoint_down.is_some() && worst != 1 {
            return ENDPOINT_DOWN_EXIT;
        }
        worst
    }

    fn worst_exit_code(&self) -> u8 {
        let severity = |code: u8| match code {
            0 => 0,
            3 => 1,
            4 => 2,
            _ => 3,
        };
        // The model row decides the exit code only as an accusation: an honest audit settles
        // its platform before the model's own evidence reaches a threshold.
        self.dimensions
            .iter()
            .filter(|d| d.dimension != Dimension::Model || d.status == DimensionStatus::Mismatch)
            .map(|d| d.status.exit_code())
            .chain([self.verdict.exit_code()])
            .max_by_key(|c| severity(*c))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(verdict: Verdict, statuses: &[DimensionStatus]) -> VerifyReport {
        VerifyReport {
            claim: "*/llamacpp/f16/*".into(),
            claimed: vec![],
            alternatives: vec![],
            classes: vec![],
            verdict,
            confidence: 0.5,
            log_likelihood_ratio: 0.0,
            thresholds: (4.6, -4.6),
            format_thresholds: None,
            queries: 8,
            output_tokens: 64,
            presentation: None,
            endpoint_down: None,
            spending_cap: None,
            dimensions: statuses
                .iter()
                .map(|s| DimensionVerdict {
                    dimension: Dimension::Format,
                    claimed: "f16".into(),
                    status: *s,
                    nearest: "f16".into(),
                    log_likelihood_ratio: None,
                    note: None,
                    unseen: false,
                })
                .collect(),
            evidence: vec![],
        }
    }

    #[test]
    fn the_exit_code_follows_the_worst_claimed_dimension() {
        use DimensionStatus::*;
        let inconclusive = || Verdict::Inconclusive {
            reason: "budget".into(),
        };
        assert_eq!(report(Verdict::Consistent, &[Consistent]).exit_code(), 0);
        assert_eq!(report(inconclusive(), &[Consistent]).exit_code(), 3);
        assert_eq!(
            report(inconclusive(), &[Consistent, Mismatch]).exit_code(),
            1
        );
        assert_eq!(
            report(inconclusive(), &[Unknown, Inconclusive]).exit_code(),
            4
        );
        assert_eq!(report(inconclusive(), &[Unknown, Mismatch]).exit_code(), 1);
        assert_eq!(report(Verdict::Consistent, &[Inconclusive]).exit_code(), 3);
        assert_eq!(report(inconclusive(), &[]).exit_code(), 3);
    }

    #[test]
    fn an_endpoint_that_went_down_exits_apart_unless_an_accusation_stands() {
        use DimensionStatus::*;
        let inconclusive = || Verdict::Inconclusive {
            reason: "budget".into(),
        };
        let mut down = report(inconclusive(), &[Inconclusive]);
        down.went_down("the endpoint went down".into());
        assert_eq!(down.exit_code(), ENDPOINT_DOWN_EXIT);
        let Verdict::Inconclusive { reason } = &down.verdict else {
            panic!("{:?}", down.verdict)
        };
        assert!(reason.starts_with("the endpoint went down; with those: budget"));
        let mut unknown = report(inconclusive(), &[Unknown]);
        unknown.went_down("down".into());
        assert_eq!(unknown.exit_code(), ENDPOINT_DOWN_EXIT);
        let mut accused = report(inconclusive(), &[Mismatch]);
        accused.went_down("down".into());
        assert_eq!(accused.exit_code(), 1);
    }
}
