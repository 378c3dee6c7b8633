//! Text-only evidence: an endpoint that shows no logprobs still shows its greedy continuation,
//! and a continuation equal to one class's recomputation and not another's tells them apart.
//! The same text as every class is no evidence; a text unlike every class says the stack is
//! unknown and weighs against no class.

use std::collections::HashMap;

use crate::features::View;
use crate::model::ClassLabel;

/// How often an honest server on other hardware or another build changes its greedy text where
/// the formats' texts part (measured on the Xeon grid, 8 tokens: AVX-512 F16 against the AVX2
/// references, 1 of 11 such prompts took Q8_0's text and 1 no known text), rounded up: a text
/// unlike a class's costs it ln 0.2 = −1.6 nats, so an accusation takes three answers that agree.
pub const TEXT_FLIP: f64 = 0.2;

/// Per class, the reference platforms (indices into the spec's references) whose text stands for
/// it: its own, else those of its format (a class batched under load has no reference of its
/// own, and its greedy text is its format's).
#[derive(Debug, Clone, PartialEq)]
pub struct TextReferences {
    by_class: Vec<Vec<usize>>,
}

/// What one answer's text says.
#[derive(Debug, Clone, PartialEq)]
pub enum TextEvidence {
    /// No class has a reference text for this probe.
    NoReference,
    /// Per class, its log-likelihood (0 where its text is the answer's, ln [`TEXT_FLIP`] where
    /// not); `separates` is false when every class with a text has the answer's.
    Weighed { ll: Vec<f64>, separates: bool },
    /// The text is no class's.
    UnlikeEveryClass,
}

impl TextReferences {
    pub fn new(
        references: &[String],
        reference_class: &HashMap<String, usize>,
        classes: &[ClassLabel],
    ) -> TextReferences {
        let formats: Vec<Option<hspi_datasets::NumericFormat>> = references
            .iter()
            .map(|r| r.parse::<hspi_datasets::Platform>().ok().map(|p| p.format))
            .collect();
        let by_class = classes
            .iter()
            .enumerate()
            .map(|(c, class)| {
                let own: Vec<usize> = (0..references.len())
                    .filter(|i| reference_class.get(&references[*i]) == Some(&c))
                    .collect();
                if !own.is_empty() {
                    return own;
                }
                (0..references.len())
                    .filter(|i| {
                        formats[*i].is_some_and(|f| class.members.iter().any(|m| m.format == f))
                    })
                    .collect()
            })
            .collect();
        TextReferences { by_class }
    }

    /// Per class, its reference texts for one probe (`views` in the spec's reference order).
    pub fn texts<'v>(&self, views: &'v [Option<View>]) -> Vec<Vec<&'v str>> {
        self.by_class
            .iter()
            .map(|refs| {
                refs.iter()
                    .filter_map(|i| match views.get(*i) {
                        Some(Some(View::Steps { text, .. })) => Some(text.as_str()),
                        _ => None,
                    })
                    .collect()
            })
            .collect()
    }

    pub fn weigh(&self, answer: &str, views: &[Option<View>]) -> TextEvidence {
        let texts = self.texts(views);
        if texts.iter().all(Vec::is_empty) {
            return TextEvidence::NoReference;
        }
        let same: Vec<bool> = texts.iter().map(|t| t.contains(&answer)).collect();
        if !same.contains(&true) {
            return TextEvidence::UnlikeEveryClass;
        }
        let with_text = texts.iter().filter(|t| !t.is_empty()).count();
        TextEvidence::Weighed {
            ll: same
                .iter()
                .map(|s| if *s { 0.0 } else { TEXT_FLIP.ln() })
                .collect(),
            separates: same.iter().filter(|s| **s).count() < with_text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(p: &str) -> ClassLabel {
        ClassLabel {
            id: p.into(),
            members: vec![p.parse().unwrap()],
            repeats: None,
        }
    }

    fn text(t: &str) -> Option<View> {
        Some(View::Steps {
            text: t.into(),
            steps: Vec::new(),
        })
    }

    #[test]
    fn a_text_tells_apart_only_classes_whose_texts_differ() {
        let refs: Vec<String> = ["f16", "q8_0"]
            .iter()
            .map(|f| format!("cpu-avx2/llamacpp-1/{f}/bs1"))
            .collect();
        let classes = vec![
            class(&refs[0]),
            class(&refs[1]),
            // Under load: no reference of its own, its format's text.
            class("cpu-avx2/llamacpp-1/q8_0/bs4"),
        ];
        let rc: HashMap<String, usize> = refs.iter().cloned().zip(0..).collect();
        let t = TextReferences::new(&refs, &rc, &classes);
        let flip = TEXT_FLIP.ln();
        assert_eq!(
            t.weigh("b", &[text("a"), text("b")]),
            TextEvidence::Weighed {
                ll: vec![flip, 0.0, 0.0],
                separates: true
            }
        );
        assert_eq!(
            t.weigh("a", &[text("a"), text("a")]),
            TextEvidence::Weighed {
                ll: vec![0.0; 3],
                separates: false
            }
        );
        assert_eq!(
            t.weigh("c", &[text("a"), text("b")]),
            TextEvidence::UnlikeEveryClass
        );
        assert_eq!(t.weigh("a", &[None, None]), TextEvidence::NoReference);
    }
}
