//! Format evidence that survives a change of hardware, build, engine, kernel options or batching.
//!
//! A format leaves its own rounding pattern in every value: the deviation of its recomputation
//! from the widest reference, `d = R_format − R_base`. Served elsewhere, an answer's deviation
//! from the base, `a = X − R_base`, keeps part of that pattern's direction (on the Xeon grid,
//! AVX-512 answers carry 55–67 % of their own format's AVX2 pattern and 0–9 % of the others') and
//! all of its size: Q8_0 answers lie about as far from F32 as Q8_0's recomputation does, whichever
//! engine computed them, while engines and serving options move values only about as far as F16
//! does. Each format is weighed as `a ≈ β·d` (β in [½, 1]; the base as `a ≈ 0`) by a Gaussian
//! likelihood whose noise variance is fitted but bounded by the nearest format's pattern (plus
//! the format's own pattern for a format); every pair of formats is compared on the values the
//! answer shares with both, and a format scores its worst contest: 1 nat at most where the
//! contest turns on an answer's size beyond a bound, 2 where on its direction alone. The
//! base against the nearest format is a contest at the scale of the noise itself, so there the
//! variances are free and only the direction counts.

use hspi_datasets::{NumericFormat, Platform};

use crate::features::view::StepView;
use crate::features::View;
use crate::model::ClassLabel;

/// Most one answer's format evidence counts (nats) where it turns on a size beyond a bound (a
/// direction counts up to [`DIRECTION_CAPS`] of it). Serving changes hspi never saw move an
/// answer's values as far as a format does (llama.cpp with flash attention off: Q8_0 answers as far
/// from Q8_0's recomputation as from F32's), so one answer is weak evidence and an accusation
/// takes several that agree.
pub const FORMAT_CAP: f64 = 1.0;
/// Most one answer's evidence in one contest counts, in caps ([`FORMAT_CAP`]), where it is
/// direction: one format's residual far below what the other's noise bound allows, each
/// variance taken at most at its bound (int4 answers against fp4: 30–70 nats an answer). That
/// part does not grow with noise hspi never saw; the rest, an answer's size beyond a format's
/// bound, does (llama.cpp's flash attention over 200-word prompts moves honest F16 answers as far
/// from f16 as Q8_0's pattern: 30–100 nats Q8_0's way, by size), and counts one cap at most.
const DIRECTION_CAPS: f64 = 2.0;
/// Direction evidence per compared step (nats) that counts one cap; twice it counts
/// [`DIRECTION_CAPS`]. Honest engines' answers lose a contest by direction by at most 0.9 nats a
/// step (vLLM's W8A8 against q8_0, PyTorch's bf16 and FP8 0.6), substitutions by 1–7 (INT4
/// against fp4: 4–7).
const DIRECTION_PER_STEP: f64 = 1.0;
/// Caps one compared step may add at most: a short answer (one or two steps compared, its text
/// parted from the references') counts no more than one cap however decided its steps look.
const STEP_SHARE: f64 = 0.25;
/// Least share of a format's own pattern an answer served in that format keeps (see above).
const MIN_SHARE: f64 = 0.5;
/// Squared differences below this are rounding of the printed value, not a pattern.
const FLOOR: f64 = 1e-12;

/// Formats whose rounding a change of engine or build reaches (f32's accumulation orders move
/// SmolLM2's logprobs a quarter as far as f16's rounding does): no direction tells them from the
/// base. bf16's rounding is 500 times a change of engine's, a quantised format's more.
pub fn within_engine_noise(format: NumericFormat) -> bool {
    matches!(
        format,
        NumericFormat::F32 | NumericFormat::Tf32 | NumericFormat::F16
    )
}

/// Where the finest format beyond them is the nearest reference, the share of its pattern that
/// bounds a change of engine (llama.cpp's F32 and F16 answers are 0.2 % and 0.7 % of vLLM's bf16
/// pattern in size, its Q8_0 answers 300 %).
pub const BASE_REACH: f64 = 0.1;

/// Which of the model's reference platforms stand for which format.
#[derive(Debug, Clone, PartialEq)]
pub struct FormatReferences {
    /// (format, index into the spec's references); the base first (the finest format within a change of engine's reach, else the widest).
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
        // NumericFormat is declared from the widest format to the narrowest; the base is the
        // finest within a change of engine's reach where there is one (f16 before bf16: with
        // llama.cpp's f16 and hspi's bf16 alone, bf16 as the base made vLLM's honest bf16
        // answers, each engine's own bf16 rounding, look like f16's pattern: accused 200/200).
        formats.sort_by_key(|(f, _)| *f);
        if let Some(at) = formats.iter().position(|(f, _)| within_engine_noise(*f)) {
            let base = formats.remove(at);
            formats.insert(0, base);
        }
        let covered = classes
            .iter()
            .flat_map(|c| &c.members)
            .all(|m| formats.iter().any(|(f, _)| *f == m.format));
        (formats.len() >= 2 && covered).then_some(FormatReferences { formats })
    }

    pub fn formats(&self) -> Vec<NumericFormat> {
        self.formats.iter().map(|(f, _)| *f).collect()
    }

    /// Per format (in [`Self::formats`] order), how much worse it explains the answer than the
    /// format that explains it best, in nats within [−`cap`, 0]; None when a format's reference
    /// did not answer this probe.
    /// `rounding`: variance the API's rounding of the values adds to every contest's noise.
    pub fn score(
        &self,
        answer: &View,
        references: &[Option<View>],
        cap: f64,
        rounding: f64,
    ) -> Option<Vec<f64>> {
        let refs: Vec<&View> = self
            .formats
            .iter()
            .map(|(_, i)| references.get(*i).and_then(Option::as_ref))
            .collect::<Option<_>>()?;
        // The nearest format to the base (the least pattern, each measured on the values the
        // answer shares with the base and it) bounds the noise of a change of hardware or build
        // in every contest. Not on the values every format shares: one format whose greedy text
        // parts from the answer's at the first token (a pack's 4-bit mix) would leave none, and
        // the answer would weigh nothing.
        let nearest = (1..refs.len())
            .map(|k| {
                let (pair, _) = matched(answer, &[refs[0], refs[k]]);
                (k, pattern_variance(&pair, 1))
            })
            .filter(|(_, v)| *v > FLOOR)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(k, _)| k);
        let Some(nearest) = nearest else {
            return Some(vec![0.0; refs.len()]);
        };
        // Each pair of formats is weighed on the values the answer shares with both (and with
        // the base and the nearest format), so a format whose tokens part early from the
        // answer's does not shorten the contests of the others; a format scores its worst
        // contest.
        let k = refs.len();
        let mut worst = vec![cap; k];
        // The cap of the contest that set each format's worst: how far below the best that
        // format may fall (an answer's size beyond a bound counts one cap, a direction more).
        let mut reach_of_worst = vec![cap; k];
        // Whether a format had a contest at all: one whose reference shares no value with the
        // answer (its first token's list has none of the answer's: a 5-bit mix answering in
        // byte tokens) explains none of it, and must not stand as the best at its initial cap.
        let mut weighed = vec![false; k];
        for g in 0..k {
            for h in g + 1..k {
                let mut at = vec![0, g, h, nearest];
                at.sort_unstable();
                at.dedup();
                let sub: Vec<&View> = at.iter().map(|i| refs[*i]).collect();
                let (values, steps) = matched(answer, &sub);
                let column = |f: usize| at.iter().position(|i| *i == f).expect("listed");
                let mut noise = pattern_variance(&values, column(nearest));
                if values.is_empty() || noise <= FLOOR {
                    continue;
                }
                // A nearest format beyond a change of engine's reach (bf16 where no f16
                // reference is at hand) does not measure that change: a share of it does.
                let engine_scale = within_engine_noise(self.formats[nearest].0);
                if !engine_scale {
                    noise *= BASE_REACH;
                }
                noise += rounding;
                // The base against the nearest format is a contest at the scale of the noise
                // itself: there the variances are left free, so only the direction of the
                // deviation counts (engines move values about as far as F16 does). The values
                // of one step move together (a shifted logit moves its whole top list), so
                // there each step counts once: an engine whose noise is several times the
                // pattern's would otherwise win or lose the direction by chance at full weight
                // (PyTorch's f32 against llama.cpp's F32 and F16: 2 of 200 audits accused).
                let mut weight = 1.0;
                let at_noise_scale = (g, h) == (0, nearest) && engine_scale;
                if at_noise_scale {
                    noise = f64::INFINITY;
                    weight = steps as f64 / values.len() as f64;
                }
                let fg = fit(&values, column(g), noise);
                let fh = fit(&values, column(h), noise);
                // The direction's part, where it agrees with the whole, may count past one cap
                // ([`DIRECTION_CAPS`]); a size beyond a bound, and the base's contest at the
                // noise's own scale, count one cap at most.
                let full = weight * (fg.log_likelihood - fh.log_likelihood);
                let direction = weight * (fg.direction - fh.direction);
                let per_step = direction.abs() / (DIRECTION_PER_STEP * steps.max(1) as f64);
                let positions = STEP_SHARE * steps as f64;
                let strong = per_step.min(positions).clamp(1.0, DIRECTION_CAPS) * cap;
                let (d, reach) =
                    if !at_noise_scale && direction * full > 0.0 && direction.abs() > cap {
                        (
                            full.signum() * direction.abs().min(full.abs()).min(strong),
                            strong,
                        )
                    } else {
                        (full.clamp(-cap, cap), cap)
                    };
                if d < worst[g] {
                    (worst[g], reach_of_worst[g]) = (d, reach);
                }
                if -d < worst[h] {
                    (worst[h], reach_of_worst[h]) = (-d, reach);
                }
                weighed[g] = true;
                weighed[h] = true;
            }
        }
        for (w, weighed) in worst.iter_mut().zip(&weighed) {
            if !weighed {
                *w = -cap;
            }
        }
        let best = worst.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(
            worst
                .iter()
                .zip(&reach_of_worst)
                .map(|(w, reach)| (w - best).max(-reach))
                .collect(),
        )
    }

    /// The index into the spec's references of each format's reference, in [`Self::formats`]
    /// order.
    pub fn reference_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.formats.iter().map(|(_, i)| *i)
    }

    /// Per format (in [`Self::formats`] order), its score from per-class scores: the best of
    /// the classes with a member in that format (the inverse of [`Self::class_scores`]).
    pub fn format_scores(&self, class_scores: &[f64], classes: &[ClassLabel]) -> Vec<f64> {
        self.formats
            .iter()
            .map(|(f, _)| {
                classes
                    .iter()
                    .zip(class_scores)
                    .filter(|(c, _)| c.members.iter().any(|m| m.format == *f))
                    .map(|(_, v)| *v)
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect()
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

/// `[answer, base, format…]` values at the same place: every logit, or each top-list entry the
/// answer and every reference share, step by step while the answer's tokens agree with all the
/// references (the step where they part still had the same context). Every format is weighed on
/// the same values, so their log-likelihoods compare. Also the number of independent
/// observations among them: the steps they come from (every logit counts for itself).
fn matched(answer: &View, refs: &[&View]) -> (Vec<Vec<f64>>, usize) {
    let steps = matched_steps(answer, refs);
    // Steps whose top lists shared no entry gave no values and do not count.
    let used = steps.iter().filter(|s| !s.is_empty()).count();
    let values: Vec<Vec<f64>> = steps.into_iter().flatten().collect();
    let used = if matches!(answer, View::Logits(_)) {
        values.len()
    } else {
        used
    };
    (values, used)
}

/// The values of [`matched`], grouped by the step they come from (the logits are one group).
pub(crate) fn matched_steps(answer: &View, refs: &[&View]) -> Vec<Vec<Vec<f64>>> {
    if let View::Logits(x) = answer {
        let logits: Option<Vec<&Vec<f32>>> = refs
            .iter()
            .map(|r| match r {
                View::Logits(v) if v.len() == x.len() => Some(v),
                _ => None,
            })
            .collect();
        let Some(logits) = logits else {
            return Vec::new();
        };
        return vec![(0..x.len())
            .map(|i| {
                std::iter::once(f64::from(x[i]))
                    .chain(logits.iter().map(|r| f64::from(r[i])))
                    .collect()
            })
            .collect()];
    }
    let (View::Steps { steps: x, .. }, Some(steps)) = (
        answer,
        refs.iter()
            .map(|r| match r {
                View::Steps { steps, .. } => Some(steps),
                _ => None,
            })
            .collect::<Option<Vec<_>>>(),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, step) in x.iter().enumerate() {
        let Some(at): Option<Vec<&StepView>> = steps.iter().map(|s| s.get(i)).collect() else {
            break;
        };
        out.push(
            step.top
                .iter()
                .filter_map(|(k, v)| {
                    std::iter::once(Some(f64::from(*v)))
                        .chain(at.iter().map(|r| r.entry(k).map(f64::from)))
                        .collect::<Option<Vec<f64>>>()
                })
                .collect(),
        );
        if at.iter().any(|r| !r.key.same(&step.key)) {
            break;
        }
    }
    out
}

/// Mean squared deviation of column `k`'s recomputation from the base's (column 1 of `values`).
fn pattern_variance(values: &[Vec<f64>], k: usize) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values
        .iter()
        .map(|v| (v[k + 1] - v[1]).powi(2))
        .sum::<f64>()
        / values.len() as f64
}

/// One format's fit of an answer ([`fit`]).
struct Fit {
    log_likelihood: f64,
    /// Its part that weighs the residual's variance up to the bound alone: the direction,
    /// not a size beyond the bound.
    direction: f64,
}

/// The log-likelihood of the answer's deviations from the base, `a = X − base`, under the
/// format in column `k` (0 is the base): the base's as `a ≈ 0`, another format's as `a ≈ β·d`
/// with `d = R_format − base` and β in [MIN_SHARE, 1]. The noise variance is fitted but bounded:
/// a change of hardware, build or serving adds at most `noise`, the nearest format's pattern
/// variance (measured: engines and serving options move values about as far as F16 does), and a
/// format's own rounding, drawn afresh where the answer does not repeat the reference's, at most
/// its pattern's variance more. So an answer as far from the base as a format's pattern reaches
/// is that format's even where its direction differs (Q8_0 rounds the activations, which another
/// engine computes a little differently), and no nearer format can stand for it.
fn fit(values: &[Vec<f64>], k: usize, noise: f64) -> Fit {
    let n = values.len() as f64;
    let loglik = |mean_square: f64, bound: f64| {
        let mean_square = mean_square + FLOOR;
        let variance = mean_square.min(bound + FLOOR);
        Fit {
            log_likelihood: -n / 2.0 * (variance.ln() + mean_square / variance),
            direction: -n / 2.0 * variance.ln(),
        }
    };
    let answer = values.iter().map(|v| v[0] - v[1]);
    let pattern = pattern_variance(values, k);
    if k == 0 || pattern <= FLOOR {
        return loglik(answer.map(|a| a * a).sum::<f64>() / n, noise);
    }
    let sad: f64 = values
        .iter()
        .map(|v| (v[0] - v[1]) * (v[k + 1] - v[1]))
        .sum();
    let beta = (sad / (pattern * n)).clamp(MIN_SHARE, 1.0);
    let fitted = values
        .iter()
        .map(|v| ((v[0] - v[1]) - beta * (v[k + 1] - v[1])).powi(2))
        .sum::<f64>()
        / n;
    loglik(fitted, noise + pattern)
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
        // Without f32, f16 (a change of engine's reach) is the base, not the wider bf16.
        let two = ["cpu-avx2/candle-1/bf16/bs1", "cpu-avx2/llamacpp-1/f16/bs1"].map(String::from);
        let classes: Vec<ClassLabel> = two.iter().map(|r| class(r)).collect();
        let f = FormatReferences::new(&two, &classes).unwrap();
        assert_eq!(f.formats(), vec![NumericFormat::F16, NumericFormat::Bf16]);
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
        let s = f.score(&View::Logits(served_q8), &views, 3.0, 0.0).unwrap();
        assert_eq!(s[1], 0.0, "q8_0 explains it best");
        assert_eq!(s[0], -3.0, "f32 far worse, capped");
        let s = f
            .score(&View::Logits(served_f32), &views, 3.0, 0.0)
            .unwrap();
        assert_eq!(s, vec![0.0, -3.0]);
        assert_eq!(f.class_scores(&s, &classes), vec![-3.0, 0.0]);
        assert_eq!(
            f.score(&View::Logits(vec![0.0]), &[None, None], 3.0, 0.0),
            None
        );
    }

    /// An answer farther from the base than the noise allows but no nearer a format's fit than
    /// that (an engine's own deviation, as llama.cpp's flash attention over long prompts): the
    /// format wins on size alone, which counts one cap, however far the answer lies; only a fit
    /// far closer than the other's bound allows counts more.
    #[test]
    fn a_size_beyond_the_noise_alone_counts_one_cap_a_close_direction_two() {
        let classes: Vec<ClassLabel> = refs().iter().map(|r| class(r)).collect();
        let f = FormatReferences::new(&refs(), &classes).unwrap();
        let base: Vec<f32> = (0..40).map(|i| (i as f32 * 0.37).sin()).collect();
        let pattern = |i: usize| 0.05 * ((i * 7 % 11) as f32 - 5.0) / 5.0;
        let q8: Vec<f32> = (0..40).map(|i| base[i] + pattern(i)).collect();
        // Half the pattern, and a deviation of the engine's own about as large as the pattern.
        let own = |i: usize| 0.04 * ((i * 13 % 7) as f32 - 3.0) / 3.0;
        let served: Vec<f32> = (0..40)
            .map(|i| base[i] + 0.5 * pattern(i) + own(i))
            .collect();
        let views = [Some(View::Logits(q8)), Some(View::Logits(base.clone()))];
        let s = f.score(&View::Logits(served), &views, 3.0, 0.0).unwrap();
        assert_eq!(s, vec![-3.0, 0.0], "f32 loses on size alone: one cap");
        // The same pattern with a deviation of its own a fortieth as large: q8_0's residual lies
        // far below f32's bound (more than two nats a value), and that direction counts two caps.
        let close: Vec<f32> = (0..40)
            .map(|i| base[i] + 0.5 * pattern(i) + own(i) / 40.0)
            .collect();
        let s = f.score(&View::Logits(close), &views, 3.0, 0.0).unwrap();
        assert_eq!(s, vec![-6.0, 0.0], "f32 loses on direction: two caps");
    }
}
