//! Feature extractors: one per file behind [`Extractor`], chosen by name in a [`FeatureSpec`].
//!
//! White-box extractors read full logits; black-box ones read the top-k logprobs an API returns;
//! `text-only` reads generated tokens alone. The reference-relative extractors describe an answer
//! against hspi's own recomputation of the same probe on each reference platform: the platform
//! signature lives in how an answer differs from a reference, not in its raw bits.

mod bits;
mod logprob_stats;
mod mantissa_histogram;
mod reference_relative;
mod sem;
mod text_only;
mod ulp_pattern;
pub mod view;
mod xor_reference;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ClassifyError;

pub use view::View;

/// What every extractor is given: the answer, and the reference answers to the same probe in
/// the order of [`FeatureSpec::references`] (`None` where a reference did not answer it).
pub struct Context<'a> {
    pub answer: &'a View,
    pub references: &'a [Option<View>],
    pub spec: &'a FeatureSpec,
}

pub trait Extractor {
    fn dim(&self, spec: &FeatureSpec) -> usize;
    fn extract(&self, ctx: &Context, out: &mut Vec<f64>);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureKind {
    /// The 32 raw bits of each value (HSPI-LD).
    Bits,
    /// Sign, exponent and mantissa of each value (HSPI's black-box features).
    Sem,
    /// The bits of each value XOR the first reference's value at the same place.
    XorReference,
    /// How many trailing mantissa bits are zero, as a histogram over all values.
    MantissaHistogram,
    /// Exact match, ULP distances, sign pattern and agreement against every reference.
    ReferenceRelative,
    /// Signed log-ULP distance to each reference, value by value.
    UlpPattern,
    /// Distinct values, grid step and sampled-token logprobs of an API answer.
    LogprobStats,
    /// Generated text alone, against each reference's text.
    TextOnly,
}

pub const ALL_KINDS: [FeatureKind; 8] = [
    FeatureKind::Bits,
    FeatureKind::Sem,
    FeatureKind::XorReference,
    FeatureKind::MantissaHistogram,
    FeatureKind::ReferenceRelative,
    FeatureKind::UlpPattern,
    FeatureKind::LogprobStats,
    FeatureKind::TextOnly,
];

impl FeatureKind {
    pub fn name(self) -> &'static str {
        match self {
            FeatureKind::Bits => "bits",
            FeatureKind::Sem => "sem",
            FeatureKind::XorReference => "xor-reference",
            FeatureKind::MantissaHistogram => "mantissa-histogram",
            FeatureKind::ReferenceRelative => "reference-relative",
            FeatureKind::UlpPattern => "ulp-pattern",
            FeatureKind::LogprobStats => "logprob-stats",
            FeatureKind::TextOnly => "text-only",
        }
    }

    fn extractor(self) -> &'static dyn Extractor {
        match self {
            FeatureKind::Bits => &bits::Bits,
            FeatureKind::Sem => &sem::Sem,
            FeatureKind::XorReference => &xor_reference::XorReference,
            FeatureKind::MantissaHistogram => &mantissa_histogram::MantissaHistogram,
            FeatureKind::ReferenceRelative => &reference_relative::ReferenceRelative,
            FeatureKind::UlpPattern => &ulp_pattern::UlpPattern,
            FeatureKind::LogprobStats => &logprob_stats::LogprobStats,
            FeatureKind::TextOnly => &text_only::TextOnly,
        }
    }

    /// Whether the extractor reads reference answers (and so needs `--references`).
    pub fn needs_references(self) -> bool {
        matches!(
            self,
            FeatureKind::XorReference
                | FeatureKind::ReferenceRelative
                | FeatureKind::UlpPattern
                | FeatureKind::TextOnly
        )
    }
}

impl fmt::Display for FeatureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FeatureKind {
    type Err = ClassifyError;
    fn from_str(s: &str) -> Result<Self, ClassifyError> {
        ALL_KINDS
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = ALL_KINDS.iter().map(|k| k.name()).collect();
                ClassifyError::UnknownFeature {
                    name: s.into(),
                    known: names.join(", "),
                }
            })
    }
}

/// Which features, over how many values, against which reference platforms. Persisted with a
/// model so that identification extracts exactly what training did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureSpec {
    pub kinds: Vec<FeatureKind>,
    /// `logits` (white-box) or `steps` (black-box).
    pub output_kind: String,
    /// Generated tokens read per answer (black-box).
    pub steps: usize,
    /// Values read per step: logits read, or top-k logprobs per token.
    pub width: usize,
    /// Reference platforms, in feature order.
    pub references: Vec<String>,
}

impl FeatureSpec {
    pub fn dim(&self) -> usize {
        self.kinds.iter().map(|k| k.extractor().dim(self)).sum()
    }

    pub fn extract(&self, answer: &View, references: &[Option<View>]) -> Vec<f64> {
        let ctx = Context {
            answer,
            references,
            spec: self,
        };
        let mut out = Vec::with_capacity(self.dim());
        for k in &self.kinds {
            let before = out.len();
            k.extractor().extract(&ctx, &mut out);
            debug_assert_eq!(out.len() - before, k.extractor().dim(self), "{k}");
        }
        out
    }

    pub fn describe(&self) -> String {
        let kinds: Vec<_> = self.kinds.iter().map(|k| k.name()).collect();
        format!(
            "{} over {} ({} steps x {} values, {} references)",
            kinds.join("+"),
            self.output_kind,
            self.steps,
            self.width,
            self.references.len()
        )
    }
}

/// Parse `a,b,c` into feature kinds.
pub fn parse_kinds(s: &str) -> Result<Vec<FeatureKind>, ClassifyError> {
    s.split(',')
        .map(|p| p.trim().parse())
        .collect::<Result<Vec<_>, _>>()
}

/// Every value an answer carries, for extractors that summarise rather than align.
pub(crate) fn all_values(view: &View) -> Vec<f32> {
    match view {
        View::Logits(v) => v.clone(),
        View::Steps { steps, .. } => steps
            .iter()
            .flat_map(|s| s.top.iter().map(|t| t.1).chain(s.value))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_names_round_trip() {
        for k in ALL_KINDS {
            assert_eq!(k.to_string().parse::<FeatureKind>().unwrap(), k);
        }
        let e = "bogus".parse::<FeatureKind>().unwrap_err().to_string();
        assert!(e.contains("known: bits, sem"), "{e}");
    }
}
