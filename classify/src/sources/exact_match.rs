//! A bit-identical reproduction: the answer is, bit for bit, a training answer of some classes
//! (exact values only: training answers are exact) or a reference's answer shown the same way.
//! It settles the answer, and the format with it.

use hspi_datasets::Presentation;

use super::{Answer, Context, EvidenceSource, Weighing};
use crate::exact::Lookup;

pub struct ExactMatch;

impl EvidenceSource for ExactMatch {
    fn name(&self) -> &'static str {
        "exact-match"
    }

    fn weigh(&mut self, answer: &Answer, cx: &Context) -> Weighing {
        if !answer.shows_values() {
            return Weighing::Abstains;
        }
        if let Lookup::Matches(m) = cx.model.exact.lookup(answer.record) {
            if answer.shown == Presentation::Exact && !m.is_empty() {
                return Weighing::Reproduces {
                    method: "exact-match",
                    classes: m,
                };
            }
        }
        let m: Vec<usize> = cx
            .refs
            .identical_as(answer.record, answer.shown)
            .iter()
            .filter_map(|p| cx.reference_class.get(p).copied())
            .collect();
        if m.is_empty() {
            return Weighing::Abstains;
        }
        Weighing::Reproduces {
            method: "reference-match",
            classes: m,
        }
    }
}
