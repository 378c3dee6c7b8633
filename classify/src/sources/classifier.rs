//! The trained classifier's posterior over the classes, for exact values (it never saw rounded
//! ones), clamped at the cap below the best class; and the format evidence it scores beside it.
//! Its standardised feature vectors feed the open set: answers far from every known class.

use hspi_datasets::Presentation;

use super::{Answer, Context, EvidenceSource, Weighing};

#[derive(Default)]
pub struct Classifier {
    /// Open-set vectors of the answers it weighed (none of them reproduced bit for bit).
    unmatched: Vec<Vec<f64>>,
}

/// Whether the classifier weighs this answer: exact values, and a model with a classifier.
pub fn weighs(answer: &Answer, cx: &Context) -> bool {
    answer.shown == Presentation::Exact && cx.model.has_classifier()
}

impl EvidenceSource for Classifier {
    fn name(&self) -> &'static str {
        "classifier"
    }

    fn weigh(&mut self, answer: &Answer, cx: &Context) -> Weighing {
        if !weighs(answer, cx) {
            return Weighing::Abstains;
        }
        let scored = cx.model.score_records(&[answer.record], cx.refs);
        let s = scored.into_iter().next().expect("one record scored");
        let formats = cx
            .formats
            .zip(s.format)
            .map(|(f, scores)| f.class_scores(&scores, &cx.model.classes));
        let top = s
            .log_proba
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        self.unmatched.push(s.z);
        Weighing::Scores {
            method: Some("classifier"),
            classes: s
                .log_proba
                .iter()
                .map(|v| (v - top).max(-cx.per_query_cap))
                .collect(),
            formats,
        }
    }

    fn unknown(&self, cx: &Context, nearest: usize, min_answers: usize) -> Option<String> {
        if self.unmatched.len() < min_answers {
            return None;
        }
        let open_set = &cx.model.open_set;
        let score = self
            .unmatched
            .iter()
            .map(|z| open_set.score(nearest, z))
            .sum::<f64>()
            / self.unmatched.len() as f64;
        (score > open_set.threshold).then(|| {
            format!(
                "{} answers lie {score:.2} from the nearest known class ({}), above the threshold {:.2}",
                self.unmatched.len(),
                cx.model.classes[nearest].name(),
                open_set.threshold
            )
        })
    }
}
