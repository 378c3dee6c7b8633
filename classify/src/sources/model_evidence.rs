//! Is it the claimed model at all? Formats, engines, builds and batching move a model's logprobs
//! by hundredths to tenths of a nat; another model (a smaller one behind the name, the same one
//! with layers removed, another fine-tune) moves them by nats and picks tokens the claimed model
//! finds unlikely. Each answer is measured against the nearest of the claimed model's references
//! on the positions that share their context (every position where the references were computed
//! on the provider's own tokens; the first, and those before the texts part, otherwise):
//!
//! - with logprobs, by how far its top list at the first generated position lies from the
//!   reference's (the largest absolute difference of the entries either list holds, an entry
//!   missing from one list counted at that list's lowest value, a bound);
//! - from text alone, by how unlikely the claimed model finds the provider's tokens: at each
//!   position, the reference's best logprob less its logprob of the provider's token (a token
//!   missing from its top list at least its best less its lowest), averaged.
//!
//! An answer's evidence is a score in [−1, 1] nats from that distance, between bounds measured on
//! every honest engine of the atlas and the substitutes of `tests/model_substitutes.rs`; the
//! verifier sums them and holds the sum to the format evidence's thresholds.

use crate::features::view::StepView;
use crate::features::View;

/// Logprob distance (nats) at or below which an answer counts fully for the claimed model. Against
/// the shipped pack's references, honest engines of the atlas lie at a median of 0.00–0.41
/// (llama.cpp's builds and variations, vLLM and PyTorch at f32, f16 and bf16, compressed-tensors'
/// FP8, INT4, INT8 and NVFP4 through PyTorch, vLLM's INT8 W8A8, candle's Q4_0), at most 0.69.
pub const LOGPROB_SAME: f64 = 0.45;
/// Logprob distance at or above which an answer counts fully for another model: SmolLM2 with
/// its last 6 blocks removed lies at a median of 2.35 (least 1.77), with every 5th block removed
/// 1.13 (a tenth below 0.74), the tiny LM behind the name 2.57.
pub const LOGPROB_OTHER: f64 = 0.65;
/// Mean logprob gap (nats) of the provider's tokens at or below which a text counts fully for
/// the claimed model: honest engines' greedy texts lie at 0.00–0.50 in 99 % of answers (at most
/// 0.63).
pub const TEXT_SAME: f64 = 0.4;
/// Mean gap at or above which a text counts fully for another model (the substitutes' first
/// tokens are mostly missing from SmolLM2's top 5: a median of 0.86).
pub const TEXT_OTHER: f64 = 0.8;

/// How far one answer lies from the claimed model, against its nearest reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ModelDistance {
    /// From logprobs: the distance of the first position's top lists (nats).
    Logprobs(f64),
    /// From text alone: the mean logprob gap of the provider's tokens (nats).
    Text(f64),
}

impl ModelDistance {
    /// The answer's evidence for "another model" (positive) or "the claimed model" (negative),
    /// within [−1, 1]: linear between the bounds, capped beyond them.
    pub fn score(self) -> f64 {
        let (d, same, other) = match self {
            ModelDistance::Logprobs(d) => (d, LOGPROB_SAME, LOGPROB_OTHER),
            ModelDistance::Text(d) => (d, TEXT_SAME, TEXT_OTHER),
        };
        (2.0 * (d - same) / (other - same) - 1.0).clamp(-1.0, 1.0)
    }

    pub fn value(self) -> f64 {
        match self {
            ModelDistance::Logprobs(d) | ModelDistance::Text(d) => d,
        }
    }
}

/// The model's evidence over an audit: per answer its distance, summed as scores.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelTally {
    /// Summed scores: positive for another model, negative for the claimed one (nats).
    pub total: f64,
    pub distances: Vec<ModelDistance>,
}

impl ModelTally {
    /// Weigh one answer's distance (None: nothing to measure); the score it added.
    pub fn add(&mut self, d: Option<ModelDistance>) -> Option<f64> {
        let d = d?;
        self.distances.push(d);
        let s = d.score();
        self.total += s;
        Some(s)
    }

    pub fn answers(&self) -> usize {
        self.distances.len()
    }

    /// `median 1.13 nats (logprobs) over 8 answers`.
    pub fn describe(&self) -> String {
        let mut v: Vec<f64> = self.distances.iter().map(|d| d.value()).collect();
        v.sort_by(f64::total_cmp);
        let median = v.get(v.len() / 2).copied().unwrap_or(0.0);
        let (kind, same, other) = match self.distances.first() {
            Some(ModelDistance::Text(_)) => (
                "the claimed model's logprob gap of the answers' tokens",
                TEXT_SAME,
                TEXT_OTHER,
            ),
            _ => (
                "the answers' top lists from the nearest reference",
                LOGPROB_SAME,
                LOGPROB_OTHER,
            ),
        };
        format!(
            "{kind}: median {median:.2} nats over {} answers (the claimed model's formats and engines lie within {same:.2}, other models beyond {other:.2})",
            v.len()
        )
    }
}

/// The distance of `answer` from the nearest reference, None where no reference shares a
/// position's context with it (or the answer holds nothing to measure).
pub fn distance(answer: &View, references: &[&View]) -> Option<ModelDistance> {
    let View::Steps { text, steps } = answer else {
        return None;
    };
    let with_values = steps.iter().any(|s| s.value.is_some() || !s.top.is_empty());
    let theirs = references.iter().filter_map(|r| match r {
        View::Steps { steps: theirs, .. } => Some(theirs),
        View::Logits(_) => None,
    });
    if with_values {
        return theirs
            .filter_map(|t| logprob_distance(steps, t).map(ModelDistance::Logprobs))
            .min_by(|a, b| a.value().total_cmp(&b.value()));
    }
    // From text: the nearest reference that scores every one of the provider's tokens it
    // reaches. Where none does (the token where the texts part is in no reference's list), each
    // reference only bounds the gap from below by its list's span, and the answer counts by the
    // largest bound: a token no format of the model ranks in its top list, as far below the top
    // as the widest list shows. The smallest bound would let one reference with a flat list (a
    // 5-bit mix answering in byte tokens) excuse every text.
    let gaps: Vec<(f64, bool)> = theirs.filter_map(|t| text_gap(text, t)).collect();
    let scored = gaps.iter().filter(|(_, exact)| *exact).map(|(g, _)| *g);
    match scored.min_by(f64::total_cmp) {
        Some(g) => Some(ModelDistance::Text(g)),
        None => gaps
            .iter()
            .map(|(g, _)| *g)
            .max_by(f64::total_cmp)
            .map(ModelDistance::Text),
    }
}

/// The top lists' distance at the first generated position. Its context is the prompt alone,
/// which every engine and the references share whatever they generate next; later positions'
/// lists reach into the unlikely tail, where a 4-bit format moves logprobs by a nat (candle's
/// Q4_0 against llama.cpp's: a median of 0.61 over the positions texts share, 0.41 at the first).
fn logprob_distance(ours: &[StepView], theirs: &[StepView]) -> Option<f64> {
    step_distance(ours.first()?, theirs.first()?)
}

/// The largest absolute difference over the entries either top list holds (the sampled token
/// included), an entry missing from one list counted at that list's lowest value (a bound: the
/// true value lies at or below it). The largest, not the mean: a format moves every entry a
/// little, another model moves some a lot.
fn step_distance(a: &StepView, b: &StepView) -> Option<f64> {
    let entries = |s: &StepView| -> Vec<(crate::features::view::TokenKey, f64)> {
        let mut e: Vec<_> = s
            .top
            .iter()
            .map(|(k, v)| (k.clone(), f64::from(*v)))
            .collect();
        if let Some(v) = s.value {
            if !e.iter().any(|(k, _)| k.same(&s.key)) {
                e.push((s.key.clone(), f64::from(v)));
            }
        }
        e
    };
    let (ea, eb) = (entries(a), entries(b));
    let floor = |e: &[(crate::features::view::TokenKey, f64)]| {
        e.iter().map(|(_, v)| *v).fold(f64::INFINITY, f64::min)
    };
    let (fa, fb) = (floor(&ea), floor(&eb));
    if ea.is_empty() || eb.is_empty() {
        return None;
    }
    let lookup = |e: &[(crate::features::view::TokenKey, f64)],
                  k: &crate::features::view::TokenKey| {
        e.iter().find(|(x, _)| x.same(k)).map(|(_, v)| *v)
    };
    // How unlikely the reference finds the provider's own first choice (at least the span of
    // its list when that token is missing from it): a format reorders near-ties only.
    let mut largest: f64 = 0.0;
    for (k, va) in &ea {
        largest = largest.max(match lookup(&eb, k) {
            Some(vb) => (va - vb).abs(),
            None => (va - fb).max(0.0),
        });
    }
    for (k, vb) in &eb {
        if lookup(&ea, k).is_none() {
            largest = largest.max((vb - fa).max(0.0));
        }
    }
    Some(largest)
}

/// The mean gap of the provider's tokens under the reference, over the positions sharing their
/// context: where the reference was computed on the provider's tokens, every position; else the
/// positions of the reference's own tokens the provider's text repeats, and the one where it
/// parts from them. With whether every gap is scored (false where the provider's token is
/// missing from the list where the texts part: the gap is then bounded by the list's span).
fn text_gap(text: &str, theirs: &[StepView]) -> Option<(f64, bool)> {
    let mut exact = true;
    let mut gaps = Vec::new();
    let mut rest = text;
    for step in theirs {
        let Some(best) = step.top.first().map(|(_, v)| f64::from(*v)) else {
            break;
        };
        let lowest = step
            .top
            .iter()
            .map(|(_, v)| f64::from(*v))
            .fold(f64::INFINITY, f64::min);
        if rest.is_empty() {
            break;
        }
        // The reference's own token, when the provider's text goes on with it.
        if !step.key.text.is_empty() && rest.starts_with(step.key.text.as_str()) {
            let own = step
                .value
                .map(f64::from)
                .or_else(|| step.entry(&step.key).map(f64::from))
                .unwrap_or(best);
            gaps.push((best - own).max(0.0));
            rest = &rest[step.key.text.len()..];
            continue;
        }
        // Where the texts part: the listed token the provider's text goes on with, if any.
        let listed = step
            .top
            .iter()
            .filter(|(k, _)| !k.text.is_empty() && rest.starts_with(k.text.as_str()))
            .max_by_key(|(k, _)| k.text.len())
            .map(|(_, v)| f64::from(*v));
        exact = listed.is_some();
        gaps.push(listed.map_or(best - lowest, |v| (best - v).max(0.0)));
        break;
    }
    (!gaps.is_empty()).then(|| (gaps.iter().sum::<f64>() / gaps.len() as f64, exact))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::view::TokenKey;

    fn step(token: &str, value: f32, top: &[(&str, f32)]) -> StepView {
        StepView {
            key: TokenKey::text(token),
            value: Some(value),
            top: top.iter().map(|(t, v)| (TokenKey::text(t), *v)).collect(),
        }
    }

    fn steps(text: &str, s: Vec<StepView>) -> View {
        View::Steps {
            text: text.into(),
            steps: s,
        }
    }

    #[test]
    fn a_format_is_near_and_another_model_far() {
        let reference = steps(
            "The cat",
            vec![
                step("The", -0.5, &[("The", -0.5), ("A", -1.2), ("It", -2.0)]),
                step(
                    " cat",
                    -0.3,
                    &[(" cat", -0.3), (" dog", -1.9), (" man", -2.4)],
                ),
            ],
        );
        let format = steps(
            "The cat",
            vec![
                step("The", -0.52, &[("The", -0.52), ("A", -1.17), ("It", -2.05)]),
                step(
                    " cat",
                    -0.31,
                    &[(" cat", -0.31), (" dog", -1.88), (" man", -2.43)],
                ),
            ],
        );
        let other = steps(
            "Once upon",
            vec![
                step("Once", -0.2, &[("Once", -0.2), ("The", -2.9), ("In", -3.1)]),
                step(
                    " upon",
                    -0.01,
                    &[(" upon", -0.01), (" a", -5.0), (" more", -6.0)],
                ),
            ],
        );
        let near = distance(&format, &[&reference]).unwrap();
        let far = distance(&other, &[&reference]).unwrap();
        assert!(near.value() < 0.06 && near.score() == -1.0, "{near:?}");
        assert!(far.value() > LOGPROB_OTHER && far.score() == 1.0, "{far:?}");
    }

    #[test]
    fn a_text_is_weighed_by_how_likely_the_claimed_model_finds_its_tokens() {
        let reference = steps(
            "The cat",
            vec![
                step("The", -0.5, &[("The", -0.5), ("A", -1.2), ("It", -2.0)]),
                step(
                    " cat",
                    -0.3,
                    &[(" cat", -0.3), (" dog", -1.9), (" man", -2.4)],
                ),
            ],
        );
        let text = |t: &str| steps(t, Vec::new());
        let same = distance(&text("The cat sat"), &[&reference]).unwrap();
        let tie = distance(&text("A dog"), &[&reference]).unwrap();
        let other = distance(&text("Once upon"), &[&reference]).unwrap();
        assert_eq!(same, ModelDistance::Text(0.0));
        assert!((tie.value() - 0.7).abs() < 1e-6, "{tie:?}");
        // "Once" is not in the reference's list: its gap is at least the list's span.
        assert!((other.value() - 1.5).abs() < 1e-6, "{other:?}");
    }
}
