//! The text evidence (`crate::sources::text_evidence`) for answers shown as text only: a text equal to
//! some classes' recomputation and not the others' weighs for them; the same text as every
//! class, or no class's, weighs for none (the latter counts towards "unknown").

use hspi_datasets::Outputs;

use super::{Answer, Context, EvidenceSource, Weighing};
use crate::model::PlatformModel;
use crate::sources::text_evidence::{TextEvidence, TextReferences};

/// The method of an answer whose text is no known class's.
pub const TEXT_UNLIKE: &str = "text: unlike every class";

pub struct Text {
    /// Which references' texts stand for each class.
    texts: TextReferences,
    /// Text-only answers weighed, and of those, the ones whose text is no known class's.
    answers: usize,
    unlike: usize,
}

impl Text {
    pub fn new(model: &PlatformModel) -> Text {
        Text {
            texts: TextReferences::new(
                &model.spec.references,
                &model.reference_classes(),
                &model.classes,
            ),
            answers: 0,
            unlike: 0,
        }
    }
}

impl EvidenceSource for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn weigh(&mut self, answer: &Answer, cx: &Context) -> Weighing {
        if answer.shows_values() {
            return Weighing::Abstains;
        }
        let none = || vec![0.0; cx.model.classes.len()];
        let scores = |method, classes: Vec<f64>| Weighing::Scores {
            method: Some(method),
            formats: Some(classes.clone()),
            classes,
        };
        let Outputs::Completion { text, .. } = &answer.record.outputs else {
            return scores("text: no text", none());
        };
        self.answers += 1;
        match self.texts.weigh(text, &answer.references) {
            TextEvidence::NoReference => scores("text: no reference", none()),
            TextEvidence::UnlikeEveryClass => {
                self.unlike += 1;
                scores(TEXT_UNLIKE, none())
            }
            TextEvidence::Weighed { ll, separates } => scores(
                if separates {
                    "text-match"
                } else {
                    "text: the same for every class"
                },
                ll,
            ),
        }
    }

    fn unknown(&self, cx: &Context, nearest: usize, min_answers: usize) -> Option<String> {
        (self.unlike >= min_answers && 2 * self.unlike > self.answers).then(|| {
            format!(
                "{} of {} generated texts are unlike every known class's greedy text for the same prompt (nearest: {})",
                self.unlike,
                self.answers,
                cx.model.classes[nearest].name()
            )
        })
    }
}
