//! Format evidence that survives a change of hardware, build, kernel options or batching.
//!
//! A format leaves its own rounding pattern in every value: the deviation of its recomputation
//! from the widest reference, `d = R_format − R_base`. Served on other hardware, an answer's
//! deviation from the base, `a = X − R_base`, keeps most of that pattern while the hardware adds
//! noise of its own. Measured on the Xeon grid (AVX-512 answers against AVX2 references of the
//! same 60 prompts), an answer carries 55–67 % of its own format's pattern (the least-squares β of
//! `a` on `d`) and 0–9 % of the other formats'. Each format is scored by how much better
//! `a ≈ β·d` with β held to [½, 1] explains the answer than `a ≈ 0` (the Gaussian profile
//! log-likelihood over the matched values); the base format scores 0. Holding β to at least ½
//! keeps a format's own partial pattern from being read as the base format's hardware noise,
//! and the base's noise (which leans a little toward the half-precision pattern: β ≈ 0.1) from
//! being read as the format.

use hspi_datasets::{NumericFormat, Platform};

use crate::features::view::StepView;
use crate::features::View;
use crate::model::ClassLabel;

/// Most one answer's format evidence counts (nats). Serving changes hspi never saw move an
/// answer's values as far as a format does (llama.cpp with flash attention off: Q8_0 answers as far
/// from Q8_0's recomputation as from F32's), so one answer is weak evidence and an accusation
/// takes several that agree.
pub const FORMAT_CAP: f64 = 1.0;
/// Least share of a format's own pattern an answer served in that format keeps (see above).
const MIN_SHARE: f64 = 0.5;
/// Squared differences below this are rounding of the printed value, not a pattern.
const FLOOR: f64 = 1e-12;

/// Which of the model's reference platforms stand for which format.
#[derive(Debug, Clone, PartialEq)]
pub struct FormatReferences {
    /// (format, index into the spec's references); the base (widest format) first.
    formats: Vec<(NumericFormat, usize)>,
}

impl FormatReferences {
    /// None unless the references hold at least two formats and every class's format is among
    /// them: a class in a format without a reference could not be weighed on this scale.
    pub fn new(references: &[String], classes: &[ClassLabel]) -> Option<FormatReferences> {
        let mut formats: Vec<(NumericFormat, usize)> = Vec::new();
        for (i, r) in references.iter().enumerate() {
            let Ok(p) = r.parse::<Platform>() else {
                continue;
            };
            if !formats.iter().any(|(f, _)| *f == p.format) {
                formats.push((p.format, i));
            }
        }
        // NumericFormat is declared from the widest format to the narrowest.
        formats.sort_by_key(|(f, _)| *f);
        let covered = classes
            .iter()
            .flat_map(|c| &c.members)
            .all(|m| formats.iter().any(|(f, _)| *f == m.format));
        (formats.len() >= 2 && covered).then_some(FormatReferences { formats })
    }

    pub fn formats(&self) -> Vec<NumericFormat> {
        self.formats.iter().map(|(f, _)| *f).collect()
    }

    /// Per format (in [`Self::formats`] order), how much better its pattern explains the answer
    /// than the base format's, in nats within ±`cap`; None when the base reference did not
    /// answer this probe.
    pub fn score(&self, answer: &View, references: &[Option<View>], cap: f64) -> Option<Vec<f64>> {
        let base = references.get(self.formats[0].1)?.as_ref()?;
        let scores = self
            .formats
            .iter()
            .map(|(_, i)| match references.get(*i).and_then(Option::as_ref) {
                Some(r) if *i != self.formats[0].1 => {
                    gain(&matched(answer, base, r)).clamp(-cap, cap)
                }
                _ => 0.0,
            })
            .collect();
        Some(scores)
    }

    /// A class's score: its format's (the best of its members').
    pub fn class_scores(&self, scores: &[f64], classes: &[ClassLabel]) -> Vec<f64> {
        classes
            .iter()
            .map(|c| {
                c.members
                    .iter()
                    .filter_map(|m| self.formats.iter().position(|(f, _)| *f == m.format))
                    .map(|i| scores[i])
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect()
    }
}

/// `(answer, base, format)` values at the same place: every logit, or each top-list entry all
/// three share, step by step while the answer's tokens agree with both references (the step
/// where they part still had the same context).
fn matched(answer: &View, base: &View, format: &View) -> Vec<[f64; 3]> {
    match (answer, base, format) {
        (View::Logits(x), View::Logits(b), View::Logits(f)) => x
            .iter()
            .zip(b)
            .zip(f)
            .map(|((x, b), f)| [f64::from(*x), f64::from(*b), f64::from(*f)])
            .collect(),
        (
            View::Steps { steps: x, .. },
            View::Steps { steps: b, .. },
            View::Steps { steps: f, .. },
        ) => {
            let mut out = Vec::new();
            for ((x, b), f) in x.iter().zip(b).zip(f) {
                out.extend(
                    x.top
                        .iter()
                        .filter_map(|(k, v)| Some([f64::from(*v), entry(b, k)?, entry(f, k)?])),
                );
                if x.key != b.key || x.key != f.key {
                    break;
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

fn entry(step: &StepView, key: &str) -> Option<f64> {
    step.top
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| f64::from(*v))
}

/// Profile log-likelihood of `a ≈ β·d` (β in [MIN_SHARE, 1]) against `a ≈ 0`.
fn gain(values: &[[f64; 3]]) -> f64 {
    let (mut sad, mut sdd) = (0.0, 0.0);
    for [x, b, f] in values {
        let (a, d) = (x - b, f - b);
        sad += a * d;
        sdd += d * d;
    }
    if values.is_empty() || sdd == 0.0 {
        return 0.0;
    }
    let beta = (sad / sdd).clamp(MIN_SHARE, 1.0);
    let n = values.len() as f64;
    let (mut fitted, mut zero) = (0.0, 0.0);
    for [x, b, f] in values {
        let (a, d) = (x - b, f - b);
        fitted += (a - beta * d).powi(2);
        zero += a * a;
    }
    -n / 2.0 * ((fitted / n + FLOOR) / (zero / n + FLOOR)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(platform: &str) -> ClassLabel {
        ClassLabel {
            id: platform.into(),
            members: vec![platform.parse().unwrap()],
            repeats: None,
        }
    }

    fn refs() -> Vec<String> {
        [
            "cpu-avx2/llamacpp-1/q8_0/bs1",
            "cpu-avx2/llamacpp-1/f32/bs1",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn the_widest_format_is_the_base_and_every_class_must_be_covered() {
        let classes: Vec<ClassLabel> = refs().iter().map(|r| class(r)).collect();
        let f = FormatReferences::new(&refs(), &classes).unwrap();
        assert_eq!(f.formats()[0], NumericFormat::F32);
        let mut more = classes.clone();
        more.push(class("cpu-avx2/llamacpp-1/q4_0/bs1"));
        assert_eq!(
            FormatReferences::new(&refs(), &more),
            None,
            "no q4_0 reference"
        );
        assert_eq!(FormatReferences::new(&refs()[..1], &classes[..1]), None);
    }

    #[test]
    fn an_answer_keeping_part_of_a_formats_pattern_is_that_format() {
        let classes: Vec<ClassLabel> = refs().iter().map(|r| class(r)).collect();
        let f = FormatReferences::new(&refs(), &classes).unwrap();
        let base: Vec<f32> = (0..40).map(|i| (i as f32 * 0.37).sin()).collect();
        let q8: Vec<f32> = base
            .iter()
            .enumerate()
            .map(|(i, v)| v + 0.05 * ((i * 7 % 11) as f32 - 5.0) / 5.0)
            .collect();
        // Other hardware: 60 % of the q8_0 pattern plus noise of its own.
        let noise = |i: usize| 0.01 * ((i * 13 % 7) as f32 - 3.0) / 3.0;
        let served_q8: Vec<f32> = (0..40)
            .map(|i| base[i] + 0.6 * (q8[i] - base[i]) + noise(i))
            .collect();
        let served_f32: Vec<f32> = (0..40).map(|i| base[i] + noise(i)).collect();
        let views = [Some(View::Logits(q8)), Some(View::Logits(base))];
        let s = f.score(&View::Logits(served_q8), &views, 3.0).unwrap();
        assert_eq!(s[0], 0.0, "the base scores 0");
        assert_eq!(s[1], 3.0, "q8_0, capped");
        let s = f.score(&View::Logits(served_f32), &views, 3.0).unwrap();
        assert_eq!(s[1], -3.0);
        assert_eq!(f.class_scores(&s, &classes), vec![-3.0, 0.0]);
        assert_eq!(f.score(&View::Logits(vec![0.0]), &[None, None], 3.0), None);
    }
}
