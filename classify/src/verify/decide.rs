//! The decision after each answer: another model first, then tampering, the format, the open
//! set and the classes' ratio against Wald's thresholds.

use hspi_datasets::{top_label, Dimension};

use super::{Verdict, Verifier};
use crate::dimension_verdict::{dimension_llr, on_claim};

impl Verifier<'_> {
    /// Another model first (a format or platform of the wrong model means nothing), then the
    /// platform's dimensions, held while the model's evidence leans towards another model.
    pub(super) fn decide(&self) -> Option<Verdict> {
        if self.evidence.len() >= self.params.min_queries {
            if let Some(v) = self.model_mismatch() {
                return Some(v);
            }
        }
        let v = self.decide_platform()?;
        if self.model_unsettled() && !matches!(v, Verdict::Tampered { .. }) {
            return None;
        }
        Some(v)
    }

    /// The platform's verdict: a mixture once the answers settle two formats often enough; a
    /// consistent one held while `--routed-share` still needs answers.
    pub(super) fn decide_platform(&self) -> Option<Verdict> {
        let v = self.decide_single()?;
        if v == Verdict::Consistent && self.routing_unchecked() {
            return None;
        }
        Some(v)
    }

    /// The verdict as if one platform served every answer, once no mixture is seen.
    pub(super) fn decide_single(&self) -> Option<Verdict> {
        let n = self.evidence.len();
        if n < self.params.min_queries {
            return None;
        }
        if self.tampered.len() >= self.params.min_queries {
            return Some(Verdict::Tampered {
                reason: format!(
                    "{} of {n} answers hold values no known computation produces: {}",
                    self.tampered.len(),
                    self.tampered[0]
                ),
            });
        }
        if self.mixed() {
            return Some(self.mixture());
        }
        // Answers of two formats, too few of the second for a mixture: the aggregate of a
        // mixture looks like a format no reference covers, so no single-format verdict yet,
        // but for a mismatch where most answers settled off the claim.
        let held = self.routes_split().is_some();
        if held && !self.split_mostly_off_claim() {
            return None;
        }
        let (accuse, accept) = self.params.thresholds();
        let format_accuse = self.format_accuse();
        let format = self.format_llr();
        if self.format_accusable() {
            let Some(why) = self.format_unaccused() else {
                if self.single_format_early() {
                    return None;
                }
                return Some(self.format_mismatch());
            };
            // A scheme no reference covers settles nothing more with more answers, once they
            // are as many as answers of one cap each need to reach the threshold: fewer strong
            // ones may not yet show the pattern of the known format they are.
            if self.format_identity().is_some_and(|i| i.is_unseen()) {
                if !self.unseen_settled() && self.can_continue(0) {
                    return None;
                }
                return Some(Verdict::Inconclusive { reason: why });
            }
        }
        if held {
            return None;
        }
        // The ratio finds the claimed format consistent, but the answers lack (or do not yet
        // show) the rounding pattern of the format that explains them: a format no reference
        // covers is never confirmed on the strength of its nearest known one.
        let blocked = self.format_tally.is_some()
            && format.is_some_and(|v| v <= accept)
            && self.format_blocked().is_some();
        let unseen = self.format_identity().is_some_and(|i| i.is_unseen());
        // The classes differ on nothing claimed but the format, which is settled.
        let format_decides = self.format_tally.is_some()
            && format.is_some_and(|v| v <= accept)
            && !blocked
            && self.only_format_differs();
        let llr = self.llr();
        if llr >= accuse || llr <= accept || format_decides {
            if let Some(reason) = self.open_set_unknown() {
                // The format evidence accumulates more slowly than the classes' (capped lower):
                // an unknown stack is settled once the format is, or the budget ends.
                let open =
                    format.is_some_and(|v| v > accept && v < format_accuse) || (blocked && !unseen);
                if self.format_tally.is_some() && open && self.can_continue(0) {
                    return None;
                }
                return Some(self.unknown(reason));
            }
        }
        if blocked && unseen && !self.unseen_by_few_unsettled() {
            return Some(Verdict::Inconclusive {
                reason: self.format_blocked().expect("blocked"),
            });
        }
        if format_decides {
            return Some(self.consistent());
        }
        if llr >= accuse {
            let best = self.best_class(|c| !self.class_tally.claimed.contains(&c));
            let dimensions = self.accused_dimensions(best);
            // The classes differ from the claim only on a format the format evidence does not
            // (yet) find wrong: ask more rather than accuse.
            if self.format_tally.is_some() && dimensions.is_empty() {
                return None;
            }
            return Some(self.mismatch(best, dimensions));
        }
        if self.format_tally.is_some() && format.is_some_and(|v| v > accept) || blocked {
            return None;
        }
        if llr <= accept {
            return Some(self.consistent());
        }
        None
    }

    /// Whether the known classes differ on no claimed dimension but the format (a dimension no
    /// class has a reference for is left out): then the format evidence alone decides.
    pub(super) fn only_format_differs(&self) -> bool {
        self.tested
            .claimed()
            .into_iter()
            .filter(|d| *d != Dimension::Format)
            .all(|d| {
                dimension_llr(
                    &self.tested,
                    d,
                    &self.model.classes,
                    &self.class_tally.per_class,
                )
                .is_none()
            })
    }

    /// The claim holds on everything tested: consistent, or inconclusive where it names a value
    /// no known class has, or a format no known class contests (with references in one format
    /// only — a reference engine alone, say — a format near it fits as well: a quantised
    /// provider would pass for the claim).
    pub(super) fn consistent(&self) -> Verdict {
        if let Some(format) = self.claim.get(Dimension::Format) {
            if !on_claim(&self.claim, Dimension::Format, &self.model.classes).contains(&false) {
                return Verdict::Inconclusive {
                    reason: format!(
                        "the answers fit the claimed format {format}, but every reference is in that format: with none in another, a format near it (a quantised one) would fit as well; add references in other formats (--fresh-formats) or another reference engine"
                    ),
                };
            }
        }
        if self.unreferenced.is_empty() {
            return Verdict::Consistent;
        }
        let open: Vec<String> = self
            .unreferenced
            .iter()
            .map(|d| format!("{d} {}", self.claim.get(*d).unwrap_or("*")))
            .collect();
        Verdict::Inconclusive {
            reason: format!(
                "the answers are consistent with {}, but no known class has the claimed {}: hspi can neither confirm nor refute that without a reference for it",
                self.tested,
                open.join(", ")
            ),
        }
    }

    /// Why the answers are no known class's, by the first source that can tell (registry order).
    pub(super) fn open_set_unknown(&self) -> Option<String> {
        let nearest = top_label(&self.class_tally.per_class).unwrap_or(0);
        let cx = self.context();
        self.sources
            .iter()
            .find_map(|s| s.unknown(&cx, nearest, self.params.min_queries))
    }

    /// The answers match no known class. The format, weighed by evidence that tolerates a change
    /// of hardware or build, may still be decided: a format mismatch is an accusation on that
    /// dimension; a consistent format leaves the rest unknown and the verdict inconclusive,
    /// because an honest provider on a stack hspi has no reference for looks exactly so.
    pub(super) fn unknown(&self, reason: String) -> Verdict {
        let accept = self.params.thresholds().1;
        let accuse = self.format_accuse();
        match self.format_llr() {
            Some(v) if v >= accuse => match self.format_unaccused() {
                None => self.format_mismatch(),
                Some(why) => Verdict::Inconclusive {
                    reason: format!("{reason}; {why}"),
                },
            },
            Some(v) if v <= accept && self.format_blocked().is_some() => Verdict::Inconclusive {
                reason: format!(
                    "{reason}; {}",
                    self.format_blocked().expect("checked")
                ),
            },
            Some(v) if v <= accept => Verdict::Inconclusive {
                reason: format!(
                    "the claimed format {} is consistent (log-likelihood ratio {v:.2}), but {reason}: the other claimed dimensions are unknown",
                    self.claim.get(Dimension::Format).unwrap_or("*")
                ),
            },
            _ => Verdict::UnknownPlatform { reason },
        }
    }

    /// The most likely class among those `keep` admits.
    pub(super) fn best_class(&self, keep: impl Fn(usize) -> bool) -> usize {
        self.class_tally.best(keep)
    }

    pub(super) fn mismatch(&self, class: usize, dimensions: Vec<Dimension>) -> Verdict {
        let class = &self.model.classes[class];
        Verdict::Mismatch {
            likely_class: class.id.clone(),
            likely_platform: class.name(),
            dimensions,
        }
    }

    /// The claimed dimensions the likely alternative class gets wrong and the evidence supports:
    /// where the format has evidence of its own that tolerates hardware differences, the format
    /// is accused only on that evidence (see [`Self::decide`]), never on the classes' alone.
    pub(super) fn accused_dimensions(&self, best: usize) -> Vec<Dimension> {
        let members = &self.model.classes[best].members;
        Dimension::ALL
            .into_iter()
            .filter(|d| {
                members
                    .iter()
                    .all(|m| self.tested.mismatched(m).contains(d))
            })
            .filter(|d| !(self.format_tally.is_some() && *d == Dimension::Format))
            .collect()
    }
}
