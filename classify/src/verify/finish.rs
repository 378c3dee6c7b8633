//! The report when the audit ends: the verdict reached, or why none was (the budget, text
//! alone, a format hspi cannot confirm or accuse), with every dimension's row.

use hspi_datasets::Presentation;

use super::{Verdict, Verifier, VerifyReport};
use crate::dimension_verdict::{dimension_verdicts, FormatDecision, Thresholds};
use crate::sources::format_identity::FormatIdentity;
use crate::sources::TEXT_UNLIKE;

impl Verifier<'_> {
    /// Why text alone did not decide: which alternatives the texts ruled out, and which gave the
    /// claim's texts on every prompt asked.
    pub(super) fn text_only_limits(&self) -> String {
        let (_, accept) = self.params.thresholds();
        let claim = self
            .class_tally
            .claimed
            .iter()
            .map(|c| self.class_tally.per_class[*c])
            .fold(f64::NEG_INFINITY, f64::max);
        let (mut out, mut tied) = (Vec::new(), Vec::new());
        for c in
            (0..self.class_tally.per_class.len()).filter(|c| !self.class_tally.claimed.contains(c))
        {
            let name = self.model.classes[c].name();
            if self.class_tally.per_class[c] - claim <= accept {
                out.push(name);
            } else {
                tied.push(name);
            }
        }
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".into()
            } else {
                v.join(", ")
            }
        };
        format!(
            "the endpoint shows text only; over {} queries ({} output tokens) the greedy texts rule out {} but cannot tell the claim from {} ({} texts like no known class's)",
            self.evidence.len(),
            self.tokens,
            list(&out),
            list(&tied),
            self.evidence
                .iter()
                .filter(|e| e.method == TEXT_UNLIKE)
                .count()
        )
    }

    pub fn finish(self) -> VerifyReport {
        let llr = self.llr();
        let (accuse, accept) = self.params.thresholds();
        // Unlike every known class when the budget ended while the format was still open.
        let unknown = (self.evidence.len() >= self.params.min_queries)
            .then(|| self.open_set_unknown())
            .flatten()
            .map(|reason| self.unknown(reason));
        // Leaning towards another model at the end: nothing about the platform is named.
        let unsettled = (self.verdict.is_none() && self.model_unsettled()).then(|| {
            Verdict::Inconclusive {
                reason: format!(
                    "the answers lean towards another model than {} (model log-likelihood ratio {:.2}, accusing at {:.2}; {}) within the budget ({} queries, {} output tokens): no format or platform is named for them",
                    self.model.model.id,
                    self.model_tally.total,
                    self.model_accuse(),
                    self.model_tally.describe(),
                    self.evidence.len(),
                    self.tokens
                ),
            }
        });
        let unknown = if unsettled.is_some() {
            unsettled
        } else {
            unknown
        };
        // Answers of two formats, too few of one for a mixture; or consistent answers, too few
        // for the share of routing the audit was asked to see.
        let split = self
            .routes_split()
            .or_else(|| {
                self.routing_short()
                    .filter(|_| self.decide_single() == Some(Verdict::Consistent))
            })
            .filter(|_| self.verdict.is_none())
            .map(|why| Verdict::Inconclusive {
                reason: format!(
                    "{why} ({} queries, {} output tokens)",
                    self.evidence.len(),
                    self.tokens
                ),
            });
        // A format accusation held for a second route that the budget left no room to show.
        let held = (self.verdict.is_none() && self.single_format_early())
            .then(|| self.held_format_mismatch())
            .flatten();
        let unknown = held.or(split).or(unknown);
        let verdict = self.verdict.clone().or(unknown).unwrap_or_else(|| Verdict::Inconclusive {
            reason: if self.evidence.is_empty() {
                "no answers to weigh".into()
            } else if let Some(why) = self
                .incomparable
                .as_ref()
                .filter(|_| self.evidence.iter().all(|e| e.method == "not comparable"))
            {
                why.clone()
            } else if self.coarsest == Presentation::TextOnly {
                self.text_only_limits()
            } else if let Some(why) = self
                .format_unaccused()
                .filter(|_| self.format_accusable())
                .or_else(|| {
                    self.format_blocked()
                        .filter(|_| self.format_llr().is_some_and(|v| v <= accept))
                })
            {
                format!(
                    "{why} (format log-likelihood ratio {:.2}; {} queries, {} output tokens)",
                    self.format_llr().unwrap_or(0.0),
                    self.evidence.len(),
                    self.tokens
                )
            } else if llr >= accuse {
                format!(
                    "the answers are nearer a class off the claimed format than the claimed one (log-likelihood ratio {llr:.2}), but the format evidence that tolerates hardware and build differences does not find the format wrong (format log-likelihood ratio {:.2}, accusing at {:.2}) within the budget ({} queries, {} output tokens)",
                    self.format_llr().unwrap_or(0.0),
                    self.format_accuse(),
                    self.evidence.len(),
                    self.tokens
                )
            } else if llr <= accept {
                format!(
                    "the answers are consistent with the claimed classes (log-likelihood ratio {llr:.2}), but the format evidence that tolerates hardware and build differences did not confirm the claimed format (format log-likelihood ratio {:.2}, consistent at {accept:.2}) within the budget ({} queries, {} output tokens)",
                    self.format_llr().unwrap_or(0.0),
                    self.evidence.len(),
                    self.tokens
                )
            } else {
                format!(
                    "the budget ({} queries, {} output tokens) ran out with the log-likelihood ratio at {llr:.2}, between {accept:.2} (consistent) and {accuse:.2} (mismatch)",
                    self.evidence.len(),
                    self.tokens
                )
            },
        });
        let confidence = match &verdict {
            Verdict::Consistent => 1.0 - self.params.false_acceptance,
            // A mixture is an accusation too, held to the same target by `MIN_ROUTED` (measured).
            Verdict::Mismatch { .. } | Verdict::Mixed { .. } => 1.0 - self.params.false_accusation,
            Verdict::Tampered { .. } => 1.0,
            _ => 1.0 / (1.0 + (-llr.abs()).exp()),
        };
        let name = |c: usize| {
            format!(
                "{} {}",
                self.model.classes[c].id,
                self.model.classes[c].name()
            )
        };
        let identity = self.format_identity();
        let format = self.format_tally.as_ref().map(|_| FormatDecision {
            llr: self.format_llr(),
            nearest: identity
                .as_ref()
                .map(|i| i.nearest_known())
                .unwrap_or_default(),
            unseen: identity.as_ref().is_some_and(|i| i.is_unseen()),
            detail: identity
                .as_ref()
                .filter(|i| !matches!(i, FormatIdentity::Known { .. }))
                .map(|i| i.describe()),
            unconfirmed: self.format_blocked(),
            unaccused: self.format_unaccused(),
        });
        let mut dimensions = dimension_verdicts(
            &self.claim,
            &self.model.classes,
            &self.class_tally.per_class,
            format.as_ref(),
            Thresholds {
                accuse,
                accept,
                format_accuse: self.format_accuse(),
            },
            self.open_set_unknown().is_some(),
        );
        if let Verdict::Mixed { routes, .. } = &verdict {
            self.mixed_format_row(&mut dimensions, routes);
        }
        dimensions.extend(self.model_verdict());
        VerifyReport {
            presentation: (self.coarsest != Presentation::Exact).then(|| self.coarsest.describe()),
            dimensions,
            claim: self.claim.to_string(),
            claimed: self.class_tally.claimed.iter().map(|c| name(*c)).collect(),
            alternatives: (0..self.model.classes.len())
                .filter(|c| !self.class_tally.claimed.contains(c))
                .map(name)
                .collect(),
            classes: (0..self.model.classes.len()).map(name).collect(),
            verdict,
            confidence,
            log_likelihood_ratio: llr,
            thresholds: (accuse, accept),
            format_thresholds: self
                .format_tally
                .as_ref()
                .and(self.format_llr())
                .map(|_| (self.format_accuse(), accept)),
            queries: self.evidence.len(),
            output_tokens: self.tokens,
            endpoint_down: None,
            spending_cap: None,
            evidence: self.evidence,
        }
    }
}
