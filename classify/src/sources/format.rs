//! The format evidence (`crate::sources::format_evidence`) as the class scores, where the classifier does
//! not weigh the answer: values rounded by the API (the references rounded the same way, the
//! noise allowed to grow by the rounding of both), or a model with no classifier (references
//! computed for the audit's own prompts).

use hspi_datasets::Presentation;

use super::{classifier, Answer, Context, EvidenceSource, Weighing};
use crate::features::View;
use crate::sources::format_evidence::FORMAT_CAP;

pub struct Format;

impl EvidenceSource for Format {
    fn name(&self) -> &'static str {
        "format-evidence"
    }

    fn weigh(&mut self, answer: &Answer, cx: &Context) -> Weighing {
        if !answer.shows_values() || classifier::weighs(answer, cx) {
            return Weighing::Abstains;
        }
        let formats = shown_format_scores(answer, cx);
        Weighing::Scores {
            method: Some("format-evidence"),
            classes: formats
                .clone()
                .unwrap_or_else(|| vec![0.0; cx.model.classes.len()]),
            formats,
        }
    }
}

/// The format evidence of an answer as the endpoint shows it, per class: exact, or rounded to a
/// grid (the references rounded the same way, the noise allowed to grow by the rounding of
/// both). None without format references.
fn shown_format_scores(answer: &Answer, cx: &Context) -> Option<Vec<f64>> {
    let grid = match answer.shown {
        Presentation::Rounded(grid) => Some(grid),
        Presentation::Exact => None,
        Presentation::TextOnly => return None,
    };
    let formats = cx.formats?;
    let values = View::of(&answer.record.outputs);
    let rounding = match (&values, grid) {
        (_, None) => 0.0,
        (View::Steps { steps, .. }, Some(grid)) => {
            let v: Vec<f64> = steps
                .iter()
                .flat_map(|s| s.top.iter().map(|(_, v)| grid.variance(*v)))
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        }
        (View::Logits(_), _) => 0.0,
    };
    let scores = formats.score(&values, answer.compared(), FORMAT_CAP, 2.0 * rounding)?;
    Some(formats.class_scores(&scores, &cx.model.classes))
}
