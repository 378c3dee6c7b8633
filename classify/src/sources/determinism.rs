//! Determinism (`crate::model::determinism`): a class measured to repeat bit for bit, whose own answer
//! to this probe is known and differs, is ruled out, up to the cap, on top of what the other
//! sources weighed (so the format evidence between classes stays). Answers that rule out every
//! known class say the stack is unknown.

use super::{Answer, Context, EvidenceSource, Weighing};

#[derive(Default)]
pub struct Determinism {
    /// Answers that ruled out every known class.
    unreproduced: usize,
}

impl EvidenceSource for Determinism {
    fn name(&self) -> &'static str {
        "determinism"
    }

    fn weigh(&mut self, answer: &Answer, cx: &Context) -> Weighing {
        if !answer.shows_values() {
            return Weighing::Abstains;
        }
        let ruled = cx
            .model
            .ruled_out(answer.record, cx.refs, cx.reference_class, answer.shown);
        if !ruled.contains(&false) {
            self.unreproduced += 1;
        }
        Weighing::Scores {
            method: None,
            classes: ruled
                .iter()
                .map(|out| if *out { -cx.per_query_cap } else { 0.0 })
                .collect(),
            formats: None,
        }
    }

    fn unknown(&self, cx: &Context, nearest: usize, min_answers: usize) -> Option<String> {
        (self.unreproduced >= min_answers).then(|| {
            format!(
                "{} answers differ bit for bit from every known class's answer to the same probe, and every known class was measured to repeat its answers bit for bit (nearest: {})",
                self.unreproduced,
                cx.model.classes[nearest].name()
            )
        })
    }
}
