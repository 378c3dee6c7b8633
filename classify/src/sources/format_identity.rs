//! Whether answers carry a known format's own rounding, or only a rounding of its size.
//!
//! A format's deviation from the widest reference, `d = R_format − R_base`, is the rounding of
//! its weights (the same on every engine: weights are quantised once) plus that of its
//! activations (each engine's own). Served elsewhere, an answer keeps part of that direction and
//! about its size. An answer of a format no reference covers can be as large as a known format's
//! pattern (bf16's is a third of Q8_0's, vLLM's INT8 W8A8 half of Q4_0's) yet share none of it:
//! named after the known format of its size, it would be named as a format it is not.
//!
//! Per format, sums over the values the answer shares with the base and that format, each step
//! centred on its means (a shift of a whole step, its log-sum-exp, is no pattern). The evidence
//! that the answers are that format served elsewhere, against a format no reference covers, is
//! a log-ratio: the direction (`a ≈ β·d` plus noise, β in [[`min_share`], 1], against `a` as
//! noise, variances fitted) less the size (the answers' mean square against the pattern's, a
//! ratio in [[`SIZE_LOW`], [`SIZE_HIGH`]] for the format, free for an unseen one).
//!
//! Measured on SmolLM2 over audits of 8 answers against llama.cpp's AVX2 references: Q8_0 from
//! the AVX-512 build or with flash attention off ≥ +7.6 in 99 % of audits, candle's Q8_0 ≥ −1.3,
//! Q4_0 from either ≥ +8; bf16 from vLLM or PyTorch ≤ −5 in 95 % of audits; vLLM's W8A8 against
//! Q4_0 between −10 and +4.8 (its training prompts share 24 % of Q4_0's direction), never +10.
//! With candle's references, llama.cpp's Q8_0 is 0.5–0.6 of candle's Q8_0 in size.

use hspi_datasets::{EvidenceClass, FormatFamily, NumericFormat};

use crate::features::View;
use crate::sources::format_evidence::{matched_steps, within_engine_noise, BASE_REACH};

/// Least share of a format's pattern an answer of that format keeps on another engine (candle's
/// Q8_0 keeps 31 %, the least measured: 8-bit formats' activation rounding is each engine's own).
pub const MIN_SHARE: f64 = 0.25;
/// The same for 4-bit formats, whose weight rounding (the same everywhere) dominates: Q4_0 keeps
/// 97–104 % of its pattern on llama.cpp's other build and on candle, while vLLM's INT8 W8A8
/// shares up to 44 % of it on the values where their tokens agree (a third of its size).
pub const MIN_SHARE_4BIT: f64 = 0.7;

/// What tells a format served elsewhere from a format no reference covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Signature {
    /// Its rounding pattern's direction and its size: formats whose weight rounding (the same
    /// on every engine) dominates keep at least `min_share` of the pattern elsewhere.
    Pattern { min_share: f64 },
    /// Its size alone: where the activations' rounding dominates, each engine rounds them its
    /// own way (bf16 from vLLM and from PyTorch share 10 % of their directions, hspi's and
    /// vLLM's 9–16 %, their sizes within 26 %). Two formats of one size cannot be told apart
    /// by it: a pack needs references for what a provider may serve instead.
    Size,
}

/// The signature of `format` served elsewhere, from its row's evidence class.
pub fn signature(format: NumericFormat) -> Signature {
    match format.spec().evidence {
        // GGUF Q8_0 keeps 31–59 % of its pattern on llama.cpp's other build and on candle;
        // llama.cpp's answers of SmolLM2's Q6_K file (mostly Q8_0) keep 71 % of hspi's.
        EvidenceClass::Pattern => Signature::Pattern {
            min_share: MIN_SHARE,
        },
        EvidenceClass::WeightPattern => Signature::Pattern {
            min_share: MIN_SHARE_4BIT,
        },
        // hspi's INT8 W8A8 and vLLM's share 19 % of their directions, their sizes within 3 %.
        EvidenceClass::Size => Signature::Size,
    }
}

/// Least share of `format`'s pattern an answer of it keeps elsewhere (0 where only its size
/// tells).
pub fn min_share(format: NumericFormat) -> f64 {
    match signature(format) {
        Signature::Pattern { min_share } => min_share,
        Signature::Size => 0.0,
    }
}
/// Least and most mean square of answers of a format served elsewhere, as a share of that
/// format's pattern (measured 0.5–2.1 between candle's and llama.cpp's Q8_0, 0.8–1.3 for Q4_0).
pub const SIZE_LOW: f64 = 0.4;
pub const SIZE_HIGH: f64 = 4.0;
/// The same for a format known by its size alone, whose size is all that tells it (bf16 across
/// vLLM, PyTorch and hspi: 0.98–1.26).
pub const SIZE_ONLY_LOW: f64 = 2.0 / 3.0;
pub const SIZE_ONLY_HIGH: f64 = 1.5;
/// Log-ratio at or above which the answers carry the nearest format's pattern.
pub const SHOWN: f64 = 8.0;
/// Log-ratio at or above which that is firm enough to accuse a claim of a quantised family
/// whose known members are all ruled out (vLLM's W8A8 against Q4_0 never reached 12; against
/// hspi's NVFP4A16 it reached 12.9 on 47 values in 2 of 200 audits, never 20; INT4 and NVFP4
/// answers pass 20 within 64 tokens in 197 and 177 of 200).
pub const FIRM: f64 = 20.0;
/// Log-ratio at or below which they carry none of it: a format no reference covers.
pub const ABSENT: f64 = -3.0;
/// A format known by its size: the size test's penalty at most this, over at least
/// [`SIZE_VALUES`] values ([`FIRM_SIZE_VALUES`] to be firm).
pub const SIZE_OK: f64 = 1.0;
pub const SIZE_VALUES: f64 = 64.0;
pub const FIRM_SIZE_VALUES: f64 = 256.0;

/// How far answers carry one format's pattern: sums over centred values shared by the answer,
/// the base and the format.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PatternShare {
    /// Σ a², a = answer − base (centred per step).
    aa: f64,
    /// Σ a·d, d = format − base.
    ad: f64,
    /// Σ d².
    dd: f64,
    /// Degrees of freedom: values less one per step (the centring).
    n: f64,
}

impl PatternShare {
    /// Of one answer: `answer` against `base` and `format`'s references.
    pub fn of(answer: &View, base: &View, format: &View) -> PatternShare {
        let mut s = PatternShare::default();
        for step in matched_steps(answer, &[base, format]) {
            if step.len() < 2 {
                continue;
            }
            let k = step.len() as f64;
            let mean = |col: usize| step.iter().map(|v| v[col] - v[1]).sum::<f64>() / k;
            let (ma, md) = (mean(0), mean(2));
            for v in &step {
                let (a, d) = (v[0] - v[1] - ma, v[2] - v[1] - md);
                s.aa += a * a;
                s.ad += a * d;
                s.dd += d * d;
            }
            s.n += k - 1.0;
        }
        s
    }

    pub fn add(&mut self, other: &PatternShare) {
        self.aa += other.aa;
        self.ad += other.ad;
        self.dd += other.dd;
        self.n += other.n;
    }

    /// Values compared (degrees of freedom).
    pub fn values(&self) -> f64 {
        self.n
    }

    /// Mean square of the answers' deviation from the base.
    pub fn answer_size(&self) -> f64 {
        self.aa / self.n.max(1.0)
    }

    /// Mean square of the format's pattern.
    pub fn pattern_size(&self) -> f64 {
        self.dd / self.n.max(1.0)
    }

    /// The log-ratio of "this format, served elsewhere" against "a format no reference covers":
    /// positive where the answers carry the pattern at about its size, negative where they lack
    /// it or are far from its size (0 with no values).
    pub fn log_ratio(&self, min_share: f64) -> f64 {
        const FLOOR: f64 = 1e-24;
        if self.n < 1.0 || self.dd <= FLOOR {
            return 0.0;
        }
        let beta = (self.ad / self.dd).clamp(min_share, 1.0);
        let unseen = self.aa + FLOOR;
        let known = (self.aa - 2.0 * beta * self.ad + beta * beta * self.dd).max(0.0) + FLOOR;
        let direction = self.n / 2.0 * (unseen / known).ln();
        direction - self.size_penalty(SIZE_LOW, SIZE_HIGH)
    }

    /// The size test alone: a Gaussian variance test of the answers' mean square against the
    /// nearest size the format allows elsewhere (`low`–`high` of its pattern's); 0 inside that
    /// band, growing with the values outside it.
    pub fn size_penalty(&self, low: f64, high: f64) -> f64 {
        const FLOOR: f64 = 1e-24;
        if self.n < 1.0 || self.dd <= FLOOR {
            return 0.0;
        }
        let ratio = (self.aa / self.dd).max(FLOOR);
        let allowed = ratio.clamp(low, high);
        self.n / 2.0 * ((allowed / ratio).ln() + ratio / allowed - 1.0)
    }
}

/// The group `format` stands in when answers are settled one by one (`FormatShapes::settled`):
/// the base for the formats within a change of engine's reach (no direction tells them apart),
/// and a quantised KV cache with its weights' format, whose group it joins (a cache's rounding
/// grows with depth and with each engine's own activations: early in an answer it is as small
/// as a change of engine's, later as large as a format's, so one provider's answers would
/// otherwise settle as two).
pub fn route_group(base: NumericFormat, format: NumericFormat) -> NumericFormat {
    let format = format.weights();
    if format == base || within_engine_noise(format) {
        base
    } else {
        format
    }
}

/// What the answers' format is, as far as the references tell.
#[derive(Debug, Clone, PartialEq)]
pub enum FormatIdentity {
    /// This format: reproduced bit for bit, its pattern shown, or the base or a format within
    /// the noise of a change of engine (where no direction can tell them apart). `firm` unless
    /// it rests on a pattern shown below [`FIRM`].
    Known { format: NumericFormat, firm: bool },
    /// Nearest to this format in size, its pattern neither shown nor ruled out yet.
    Unconfirmed {
        nearest: NumericFormat,
        log_ratio: f64,
        values: f64,
    },
    /// A format no reference covers: near `nearest` in size without its pattern (`log_ratio`),
    /// or too far from the base and every near-base format for a change of engine (None).
    Unseen {
        nearest: NumericFormat,
        log_ratio: Option<f64>,
        /// The known formats whose pattern sizes bracket the answers' deviation (the base
        /// below all; None above the largest).
        between: (NumericFormat, Option<NumericFormat>),
    },
}

/// Why answers are not `nearest`: they lack its pattern, or lie too far for a change of engine.
fn unlike(nearest: NumericFormat, log_ratio: Option<f64>) -> String {
    match log_ratio {
        Some(lr) => format!(
            "without the pattern of {}, the nearest known (log-ratio {lr:+.1})",
            with_family(nearest)
        ),
        None => format!(
            "farther from {} than a change of engine reaches",
            with_family(nearest)
        ),
    }
}

fn with_family(f: NumericFormat) -> String {
    match FormatFamily::of(f) {
        Some(family) if family.name() != f.to_string() => format!("{f} ({family})"),
        _ => f.to_string(),
    }
}

impl FormatIdentity {
    /// Whether the claimed format may be called consistent on this identity: where the answers
    /// are known to be it, or no values could be compared (text only); not on the strength of
    /// its size alone.
    pub fn allows_consistent(&self) -> bool {
        match self {
            FormatIdentity::Known { .. } => true,
            FormatIdentity::Unconfirmed { values, .. } => *values < 1.0,
            FormatIdentity::Unseen { .. } => false,
        }
    }

    /// The format, where the answers are firmly known to be it.
    pub fn firmly(&self) -> Option<NumericFormat> {
        match self {
            FormatIdentity::Known { format, firm: true } => Some(*format),
            _ => None,
        }
    }

    pub fn is_unseen(&self) -> bool {
        matches!(self, FormatIdentity::Unseen { .. })
    }

    /// The nearest known format, whatever the identity.
    pub fn nearest(&self) -> NumericFormat {
        match self {
            FormatIdentity::Known { format, .. } => *format,
            FormatIdentity::Unconfirmed { nearest, .. }
            | FormatIdentity::Unseen { nearest, .. } => *nearest,
        }
    }

    /// What the answers are, for a verdict: `q8_0 (int8)`, or a format no reference covers.
    pub fn describe(&self) -> String {
        match self {
            FormatIdentity::Known { format, .. } => with_family(*format),
            FormatIdentity::Unconfirmed {
                nearest, log_ratio, ..
            } => format!(
                "{} by size, its rounding pattern not confirmed (log-ratio {log_ratio:+.1})",
                with_family(*nearest)
            ),
            FormatIdentity::Unseen {
                nearest,
                log_ratio,
                between,
            } => format!(
                "a format no reference covers ({}, {})",
                self.size(between),
                unlike(*nearest, *log_ratio)
            ),
        }
    }

    /// The nearest known format and how near, for a dimension's line ("nearest known …"):
    /// words without figures, so a provider's state compares from round to round.
    pub fn nearest_known(&self) -> String {
        match self {
            FormatIdentity::Known { format, .. } => with_family(*format),
            FormatIdentity::Unconfirmed { nearest, .. } => {
                format!(
                    "{} by size, its pattern not confirmed",
                    with_family(*nearest)
                )
            }
            FormatIdentity::Unseen { nearest, .. } => format!(
                "none: a format no reference covers (unlike {})",
                with_family(*nearest)
            ),
        }
    }

    fn size(&self, between: &(NumericFormat, Option<NumericFormat>)) -> String {
        match between {
            (lo, Some(hi)) => format!("its rounding between {lo}'s and {hi}'s in size"),
            (lo, None) => format!("its rounding larger than {lo}'s"),
        }
    }
}

/// The pattern shares of every format, summed over the answers the format evidence weighed, and
/// the formats answers reproduced bit for bit.
#[derive(Debug, Clone, PartialEq)]
pub struct FormatShapes {
    /// In `FormatReferences::formats` order, the base first (its share stays empty).
    formats: Vec<NumericFormat>,
    shares: Vec<PatternShare>,
    reproduced: Vec<NumericFormat>,
}

impl FormatShapes {
    pub fn new(formats: Vec<NumericFormat>) -> FormatShapes {
        FormatShapes {
            shares: vec![PatternShare::default(); formats.len()],
            formats,
            reproduced: Vec::new(),
        }
    }

    /// Add one answer against its references, one view per format (None where a format's
    /// reference did not answer the probe).
    pub fn add(&mut self, answer: &View, references: &[Option<&View>]) {
        let Some(Some(base)) = references.first() else {
            return;
        };
        for (share, reference) in self.shares.iter_mut().zip(references).skip(1) {
            if let Some(r) = reference {
                share.add(&PatternShare::of(answer, base, r));
            }
        }
    }

    /// An answer reproduced bit for bit by a platform of `format`.
    pub fn reproduced(&mut self, format: NumericFormat) {
        if !self.reproduced.contains(&format) {
            self.reproduced.push(format);
        }
    }

    pub fn shares(&self) -> impl Iterator<Item = (NumericFormat, &PatternShare)> {
        self.formats.iter().copied().zip(&self.shares)
    }

    /// The identity of the answers whose best-scoring known format is `nearest`. Where they lack
    /// its pattern, a format known by its size alone (activations quantised at run time, whose
    /// direction each engine sets its own way, so that it seldom scores best) is what they are if
    /// it is the only one their size fits.
    pub fn identity(&self, nearest: NumericFormat) -> FormatIdentity {
        let id = self.identity_of(nearest);
        if matches!(id, FormatIdentity::Known { .. }) {
            return id;
        }
        let mut fits = self
            .formats
            .iter()
            .skip(1)
            .filter(|f| **f != nearest && signature(**f) == Signature::Size)
            .map(|f| self.identity_of(*f))
            .filter(|i| matches!(i, FormatIdentity::Known { .. }));
        match (fits.next(), fits.next()) {
            (Some(only), None) => only,
            _ => id,
        }
    }

    /// The format the answers firmly are where their identity (nearest `nearest`) is known: that
    /// format if firm; else, where it is known by its size alone short of firm (FP8 W8A8, its
    /// activations each engine's own), a format of its family whose pattern they firmly show (its
    /// weight-only sibling, the same weights' rounding): firmly that family.
    pub fn firmly(&self, nearest: NumericFormat) -> Option<NumericFormat> {
        let id = self.identity(nearest);
        if let Some(f) = id.firmly() {
            return Some(f);
        }
        let FormatIdentity::Known { format, .. } = id else {
            return None;
        };
        let family = FormatFamily::of(format)?;
        self.formats
            .iter()
            .filter(|f| **f != format && FormatFamily::of(**f) == Some(family))
            .filter(|f| signature(**f) != Signature::Size)
            .find_map(|f| self.identity_of(*f).firmly())
    }

    /// Whether the answers are `format`, a format known by its size alone, on their size (over
    /// enough values). Its pattern never shows, so another format's pattern, shown by chance on
    /// a few answers, does not rule it out.
    pub fn fits_by_size(&self, format: NumericFormat) -> bool {
        self.formats.contains(&format)
            && signature(format) == Signature::Size
            && matches!(self.identity_of(format), FormatIdentity::Known { .. })
    }

    /// The one format group these shapes, of a single answer, settle ([`route_group`]): every
    /// format outside it ruled out (a format no reference covers, judged as that one), its own
    /// not. An answer is settled by exclusion, not only where its own pattern shows: 8-bit
    /// formats keep too little of their direction for one short answer to show it (llama.cpp's
    /// Q8_0 answers of 8 tokens: log-ratios 0–5), while their size rules out every other format
    /// at once. None where two groups fit (a short answer), or none does (a format no reference
    /// covers).
    pub fn settled(&self) -> Option<NumericFormat> {
        let base = *self.formats.first()?;
        let mut reproduced: Vec<NumericFormat> = self
            .reproduced
            .iter()
            .map(|f| route_group(base, *f))
            .collect();
        reproduced.sort();
        reproduced.dedup();
        match reproduced.as_slice() {
            [only] => return Some(*only),
            [] => {}
            _ => return None,
        }
        let mut open: Vec<NumericFormat> = self
            .formats
            .iter()
            .filter(|f| !self.identity_of(**f).is_unseen())
            .map(|f| route_group(base, *f))
            .collect();
        open.sort();
        open.dedup();
        match open.as_slice() {
            [only] => Some(*only),
            _ => None,
        }
    }

    /// Add another's shares and reproductions (the answers of one route, summed).
    pub fn absorb(&mut self, other: &FormatShapes) {
        for (mine, theirs) in self.shares.iter_mut().zip(&other.shares) {
            mine.add(theirs);
        }
        for f in &other.reproduced {
            self.reproduced(*f);
        }
    }

    fn identity_of(&self, nearest: NumericFormat) -> FormatIdentity {
        let known = |firm: bool| FormatIdentity::Known {
            format: nearest,
            firm,
        };
        let Some(at) = self.formats.iter().position(|f| *f == nearest) else {
            return known(true);
        };
        if self.reproduced.contains(&nearest) {
            return known(true);
        }
        let measured: Vec<(NumericFormat, &PatternShare)> = self
            .formats
            .iter()
            .copied()
            .zip(&self.shares)
            .skip(1)
            .filter(|(_, s)| s.values() >= 1.0)
            .collect();
        // The answers' deviation from the base, on the most values any format shares.
        let Some(answer) = measured
            .iter()
            .max_by(|a, b| a.1.values().total_cmp(&b.1.values()))
            .map(|(_, s)| s.answer_size())
        else {
            // Nothing compared (text only): no size and no pattern to weigh.
            return if at == 0 {
                known(true)
            } else {
                FormatIdentity::Unconfirmed {
                    nearest,
                    log_ratio: 0.0,
                    values: 0.0,
                }
            };
        };
        let between = self.between(&measured, answer);
        if at == 0 || within_engine_noise(nearest) {
            // No direction tells the base from a rounding a change of engine reaches; the size
            // does: within the finest near-base reference's reach (f16's), else far below the
            // finest other one's (a pack of f32, bf16 and int8 has no near-base yardstick).
            let yardstick = measured
                .iter()
                .filter(|(f, _)| within_engine_noise(*f))
                .map(|(_, s)| SIZE_HIGH * s.pattern_size())
                .reduce(f64::min)
                .or_else(|| {
                    measured
                        .iter()
                        .map(|(_, s)| BASE_REACH * s.pattern_size())
                        .reduce(f64::min)
                })
                .unwrap_or(f64::INFINITY);
            return if answer <= yardstick {
                known(true)
            } else if answer > 2.0 * yardstick {
                FormatIdentity::Unseen {
                    nearest,
                    log_ratio: None,
                    between,
                }
            } else {
                FormatIdentity::Unconfirmed {
                    nearest,
                    log_ratio: 0.0,
                    values: self.shares[at.max(1)].values(),
                }
            };
        }
        let share = &self.shares[at];
        if share.values() < 1.0 {
            return FormatIdentity::Unconfirmed {
                nearest,
                log_ratio: 0.0,
                values: 0.0,
            };
        }
        if signature(nearest) == Signature::Size {
            // Known by its size over enough values; the penalty as the evidence's figure.
            let penalty = share.size_penalty(SIZE_ONLY_LOW, SIZE_ONLY_HIGH);
            if penalty <= SIZE_OK && share.values() >= SIZE_VALUES {
                return known(share.values() >= FIRM_SIZE_VALUES);
            }
            if -penalty <= ABSENT {
                return FormatIdentity::Unseen {
                    nearest,
                    log_ratio: Some(-penalty),
                    between,
                };
            }
            return FormatIdentity::Unconfirmed {
                nearest,
                log_ratio: -penalty,
                values: share.values(),
            };
        }
        let log_ratio = share.log_ratio(min_share(nearest));
        if log_ratio >= SHOWN {
            return known(log_ratio >= FIRM);
        }
        if log_ratio > ABSENT {
            return FormatIdentity::Unconfirmed {
                nearest,
                log_ratio,
                values: share.values(),
            };
        }
        FormatIdentity::Unseen {
            nearest,
            log_ratio: Some(log_ratio),
            between,
        }
    }

    /// The known formats whose pattern sizes bracket the answers' deviation `size` (the base
    /// below all; None above the largest).
    fn between(
        &self,
        measured: &[(NumericFormat, &PatternShare)],
        size: f64,
    ) -> (NumericFormat, Option<NumericFormat>) {
        let mut sizes: Vec<(f64, NumericFormat)> = measured
            .iter()
            .map(|(f, s)| (s.pattern_size(), *f))
            .collect();
        sizes.sort_by(|a, b| a.0.total_cmp(&b.0));
        let below = sizes
            .iter()
            .rev()
            .find(|(p, _)| *p <= size)
            .map_or(self.formats[0], |(_, f)| *f);
        let above = sizes.iter().find(|(p, _)| *p > size).map(|(_, f)| *f);
        (below, above)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Answers and references as logits: the base, a format's pattern (size `p`), and an
    /// answer `share·d + noise` of size `noise`.
    fn views(seed: u64, share: f64, noise: f64) -> (View, View, View) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let n = 400;
        let base: Vec<f32> = (0..n).map(|_| rng.random_range(-8.0..0.0)).collect();
        let d: Vec<f64> = (0..n).map(|_| rng.random_range(-0.1..0.1)).collect();
        let format: Vec<f32> = base.iter().zip(&d).map(|(b, d)| b + *d as f32).collect();
        let answer: Vec<f32> = base
            .iter()
            .zip(&d)
            .map(|(b, d)| b + (share * d + noise * rng.random_range(-1.0..1.0)) as f32)
            .collect();
        (
            View::Logits(answer),
            View::Logits(base),
            View::Logits(format),
        )
    }

    fn identity(share: f64, noise: f64) -> FormatIdentity {
        shapes(share, noise).identity(NumericFormat::Gguf(hspi_datasets::GgufType::Q8_0))
    }

    /// One answer against f32 (the base), f16 (a pattern 1000 times smaller than q8_0's) and
    /// q8_0.
    fn shapes(share: f64, noise: f64) -> FormatShapes {
        let (a, b, f) = views(7, share, noise);
        let (_, _, near) = views(8, 0.0, 0.01);
        let mut shapes = FormatShapes::new(vec![
            NumericFormat::F32,
            NumericFormat::F16,
            NumericFormat::Gguf(hspi_datasets::GgufType::Q8_0),
        ]);
        // f16: a pattern 1000 times smaller than q8_0's.
        let tiny = match (&near, &b) {
            (View::Logits(n), View::Logits(b)) => View::Logits(
                b.iter()
                    .zip(n)
                    .map(|(b, n)| b + (n - b) * 0.001 + 1e-3)
                    .collect(),
            ),
            _ => unreachable!(),
        };
        shapes.add(&a, &[Some(&b), Some(&tiny), Some(&f)]);
        shapes
    }

    #[test]
    fn one_answer_settles_the_format_that_every_other_rules_out() {
        let q8 = NumericFormat::Gguf(hspi_datasets::GgufType::Q8_0);
        // Half of q8_0's pattern at its size: q8_0, the base and f16 ruled out.
        assert_eq!(shapes(0.5, 0.05).settled(), Some(q8));
        // At the base: f32 and f16 stand together as the base; q8_0 ruled out by its size.
        assert_eq!(shapes(0.0, 1e-5).settled(), Some(NumericFormat::F32));
        // Between the two in size, without q8_0's pattern: every format ruled out, no route.
        assert_eq!(shapes(0.0, 0.02).settled(), None);
    }

    #[test]
    fn half_the_pattern_is_the_format_and_none_of_it_an_unseen_one() {
        assert!(matches!(identity(0.5, 0.05), FormatIdentity::Known { .. }));
        let unseen = identity(0.0, 0.06);
        assert!(unseen.is_unseen(), "{unseen:?}");
        assert!(!unseen.allows_consistent());
        let text = unseen.describe();
        assert!(
            text.starts_with("a format no reference covers") && text.contains("q8_0 (int8)"),
            "{text}"
        );
        let line = unseen.nearest_known();
        assert!(
            line == "none: a format no reference covers (unlike q8_0 (int8))",
            "{line}"
        );
    }

    #[test]
    fn the_base_and_answers_without_values_are_never_unseen() {
        let mut shapes = FormatShapes::new(vec![NumericFormat::F32, NumericFormat::F16]);
        assert_eq!(
            shapes.identity(NumericFormat::F32),
            FormatIdentity::Known {
                format: NumericFormat::F32,
                firm: true
            }
        );
        let none = shapes.identity(NumericFormat::F16);
        assert!(none.allows_consistent(), "{none:?}");
        shapes.reproduced(NumericFormat::F16);
        assert_eq!(
            shapes.identity(NumericFormat::F16),
            FormatIdentity::Known {
                format: NumericFormat::F16,
                firm: true
            }
        );
    }
}
