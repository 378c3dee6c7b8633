//! Evidence sources: each weighs one answer, per class (its log-likelihood, and where it weighs
//! the format on evidence of its own, per class that format evidence) or against the claimed
//! model; the verifier (`crate::verify`) only sums what they give and applies the thresholds
//! per dimension. One source per file; [`sources`] is the registry, in the order they are asked.
//!
//! Adding one: copy `determinism.rs` (a source that adds to what the others weigh), write its
//! `weigh`, and add one line to [`sources`].

mod classifier;
mod determinism;
mod exact_match;
mod format;
pub mod format_evidence;
pub mod format_identity;
mod model;
pub mod model_evidence;
mod text;
pub mod text_evidence;

use std::collections::HashMap;

use hspi_datasets::{Presentation, Record};

use crate::features::View;
use crate::model::PlatformModel;
use crate::references::ReferenceIndex;
use crate::sources::format_evidence::FormatReferences;
use crate::sources::model_evidence::ModelDistance;

pub use text::TEXT_UNLIKE;

/// What every source may read while weighing an answer.
pub struct Context<'v> {
    pub model: &'v PlatformModel,
    pub refs: &'v ReferenceIndex,
    /// The class of each reference platform the model reads.
    pub reference_class: &'v HashMap<String, usize>,
    /// Which references stand for which format, when they cover every class's format.
    pub formats: Option<&'v FormatReferences>,
    /// Most log-likelihood one answer can contribute (nats).
    pub per_query_cap: f64,
}

/// One answer to weigh, with the references' answers to the same probe.
pub struct Answer<'r> {
    pub record: &'r Record,
    /// How the endpoint showed it (exact, rounded to a grid, text only).
    pub shown: Presentation,
    /// The references' answers to this probe, in the spec's order, as they were collected.
    pub references: Vec<Option<View>>,
    /// The same rounded as the answer is, where it is (see [`Answer::compared`]).
    rounded: Option<Vec<Option<View>>>,
}

impl<'r> Answer<'r> {
    pub fn new(record: &'r Record, shown: Presentation, cx: &Context) -> Answer<'r> {
        let references = cx.refs.views(&record.probe_id, &cx.model.spec.references);
        let rounded = matches!(shown, Presentation::Rounded(_)).then(|| {
            references
                .iter()
                .map(|v| v.as_ref().map(|v| v.shown(shown)))
                .collect()
        });
        Answer {
            record,
            shown,
            references,
            rounded,
        }
    }

    /// The answer as the endpoint showed it.
    pub fn view(&self) -> View {
        View::of(&self.record.outputs).shown(self.shown)
    }

    /// The references as this answer is compared with them: rounded as its values are, else as
    /// collected (exact values; a text is measured against their exact logprobs). Made once per
    /// answer, for every source that compares.
    pub fn compared(&self) -> &[Option<View>] {
        self.rounded.as_deref().unwrap_or(&self.references)
    }

    /// Whether the answer shows values (exact or rounded), not text alone.
    pub fn shows_values(&self) -> bool {
        self.shown != Presentation::TextOnly
    }
}

/// What a source makes of one answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Weighing {
    /// Nothing to say about this answer.
    Abstains,
    /// The answer is bit for bit these classes' answer: it settles the answer, the sources after
    /// this one are not asked, and the verifier scores the other classes at the cap.
    Reproduces {
        method: &'static str,
        classes: Vec<usize>,
    },
    /// Per class a log-likelihood to add, and per class the format evidence where the source
    /// weighs the format on evidence of its own. `method` names how the answer was weighed (the
    /// first source that names one is shown); a source that only adjusts others' names none.
    Scores {
        method: Option<&'static str>,
        classes: Vec<f64>,
        formats: Option<Vec<f64>>,
    },
    /// How far the answer lies from every reference of the claimed model (the model dimension).
    Model(Option<ModelDistance>),
}

/// One evidence source. It may keep what it needs across answers (the open set's vectors,
/// counts of unlike texts) and say from them why the answers are no known class's.
pub trait EvidenceSource {
    /// A short name, unique in the registry.
    fn name(&self) -> &'static str;

    /// Weigh one answer that can be compared with the references (asked the same way).
    fn weigh(&mut self, answer: &Answer, cx: &Context) -> Weighing;

    /// Why the answers weighed so far are no known class's, where this source can tell (the
    /// open set): `nearest` is the class the summed evidence points to, `min_answers` the fewest
    /// answers a verdict may rest on.
    fn unknown(&self, _cx: &Context, _nearest: usize, _min_answers: usize) -> Option<String> {
        None
    }
}

/// Every source, in the order they are asked: the model's evidence first (it weighs every
/// answer, reproduced or not), then a bit-identical reproduction (which settles the answer), then
/// the sources that score it. The open-set reasons are asked in the same order.
pub fn sources(model: &PlatformModel) -> Vec<Box<dyn EvidenceSource>> {
    vec![
        Box::new(model::ModelLikelihood),
        Box::new(exact_match::ExactMatch),
        Box::new(text::Text::new(model)),
        Box::new(determinism::Determinism::default()),
        Box::new(classifier::Classifier::default()),
        Box::new(format::Format),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use hspi_datasets::{Logprob, ModelInfo, Outputs, Platform, TokenStep, TopEntry};

    fn lp(v: f64) -> Logprob {
        Logprob::parse(&format!("{v:.17e}")).unwrap()
    }

    fn step(token: &str, id: u32, logprob: f64, second: (&str, f64)) -> TokenStep {
        TokenStep {
            token: token.into(),
            id: Some(id),
            bytes: None,
            logprob: Some(lp(logprob)),
            top: vec![
                TopEntry {
                    token: token.into(),
                    id: Some(id),
                    logprob: lp(logprob),
                },
                TopEntry {
                    token: second.0.into(),
                    id: None,
                    logprob: lp(second.1),
                },
            ],
        }
    }

    fn steps(first: f64) -> Outputs {
        Outputs::Completion {
            text: " a b".into(),
            steps: vec![
                step(" a", 1, first, (" b", first - 1.5)),
                step(" b", 2, -0.25, (" c", -2.0)),
            ],
            finish_reason: None,
        }
    }

    fn record(target: &str, first: f64) -> Record {
        Record {
            probe_id: "p1".into(),
            target: target.into(),
            platform: target.parse().ok(),
            outputs: steps(first),
            timing_us: 0,
            usage: None,
            served: None,
            asked_as: None,
        }
    }

    #[test]
    fn every_source_has_a_unique_name_and_scores_every_class() {
        let platforms: Vec<Platform> = [
            "cpu-avx2/llamacpp-1/f16/bs1",
            "cpu-avx2/llamacpp-1/q8_0/bs1",
        ]
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
        let model = PlatformModel::references_only(
            ModelInfo::new("m", "", hspi_datasets::CAUSAL_LM),
            &platforms,
            2,
        );
        let refs = ReferenceIndex::new(&[
            record("cpu-avx2/llamacpp-1/f16/bs1", -0.125),
            record("cpu-avx2/llamacpp-1/q8_0/bs1", -0.5),
        ]);
        let reference_class = model.reference_classes();
        let formats = model.format_references();
        let cx = Context {
            model: &model,
            refs: &refs,
            reference_class: &reference_class,
            formats: formats.as_ref(),
            per_query_cap: 4.0,
        };
        let mut all = sources(&model);
        let mut names: Vec<&str> = all.iter().map(|s| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "names repeat: {names:?}");

        // An answer bit for bit the f16 reference's: the exact match settles it.
        let same = record("endpoint:http://x/v1/chat/completions", -0.125);
        let answer = Answer::new(&same, Presentation::Exact, &cx);
        let weighed: Vec<Weighing> = all.iter_mut().map(|s| s.weigh(&answer, &cx)).collect();
        assert!(weighed.contains(&Weighing::Reproduces {
            method: "reference-match",
            classes: vec![0]
        }));
        // An answer between the two: every score has one entry per class.
        let between = record("endpoint:http://x/v1/chat/completions", -0.3);
        for shown in [Presentation::Exact, Presentation::TextOnly] {
            let answer = Answer::new(&between, shown, &cx);
            for source in &mut all {
                if let Weighing::Scores {
                    classes, formats, ..
                } = source.weigh(&answer, &cx)
                {
                    assert_eq!(classes.len(), 2, "{}", source.name());
                    assert!(formats.is_none_or(|f| f.len() == 2), "{}", source.name());
                }
            }
        }
    }
}
