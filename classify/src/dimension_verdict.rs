//! A verdict per claimed dimension (hardware, engine, format, kernel, batch), from the same
//! per-class log-likelihoods as the overall test: for each dimension, the best class the claim
//! gets wrong on that dimension against the best class it gets right, held to the same
//! thresholds. The claimed set of the overall test is the intersection of the dimensions', so a
//! dimension's ratio never exceeds the overall one. The format is the exception: where the
//! references cover every class's format it is weighed by `format_evidence` instead, and the
//! verifier accuses or confirms it on that evidence alone (so the verdict follows it).

use std::fmt;

use hspi_datasets::{Dimension, FormatFamily, Platform, PlatformPattern};
use serde::{Deserialize, Serialize};

use crate::model::ClassLabel;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DimensionStatus {
    Consistent,
    Inconclusive,
    /// The answers are unlike every known class; the nearest one's value is named.
    Unknown,
    Mismatch,
}

impl DimensionStatus {
    pub fn name(self) -> &'static str {
        match self {
            DimensionStatus::Consistent => "consistent",
            DimensionStatus::Inconclusive => "inconclusive",
            DimensionStatus::Unknown => "unknown",
            DimensionStatus::Mismatch => "mismatch",
        }
    }

    /// The exit code an audit whose worst claimed dimension has this status ends with, as the
    /// overall verdicts map: 0 consistent, 3 inconclusive, 4 unknown, 1 mismatch.
    pub fn exit_code(self) -> u8 {
        match self {
            DimensionStatus::Consistent => 0,
            DimensionStatus::Inconclusive => 3,
            DimensionStatus::Unknown => 4,
            DimensionStatus::Mismatch => 1,
        }
    }
}

impl fmt::Display for DimensionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DimensionVerdict {
    pub dimension: Dimension,
    /// The claim's field; a format family also lists the formats it covers (`int8 = q8_0, int8`).
    pub claimed: String,
    pub status: DimensionStatus,
    /// This field of the most likely class (a format also with its family: `q8_0 (int8)`).
    pub nearest: String,
    /// Best class off the claim on this dimension against the best class on it (nats); absent
    /// when every known class satisfies the claim on this dimension.
    pub log_likelihood_ratio: Option<f64>,
    /// Why the dimension is decided the way it is, when the figures alone do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The format: the answers are one no reference covers (never named as a known one).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unseen: bool,
}

impl DimensionVerdict {
    /// `format: consistent (claimed f16; evidence points to f16)`.
    pub fn line(&self) -> String {
        let llr = self
            .log_likelihood_ratio
            .map(|v| format!(", llr {v:+.2}"))
            .unwrap_or_default();
        let note = self
            .note
            .as_ref()
            .map(|n| format!(" — {n}"))
            .unwrap_or_default();
        format!(
            "{}: {} (claimed {}; nearest known {}{llr}){note}",
            self.dimension, self.status, self.claimed, self.nearest
        )
    }
}

/// A platform's field as a report shows it: formats with their family.
pub fn shown(d: Dimension, p: &Platform) -> String {
    let field = d.field(p).unwrap_or_else(|| "-".into());
    match (d, FormatFamily::of(p.format)) {
        (Dimension::Format, Some(family)) if family.name() != field => {
            format!("{field} ({family})")
        }
        _ => field,
    }
}

/// The formats of the known classes a family covers, sorted (`int8`: `q8_0`).
pub fn family_members(family: FormatFamily, classes: &[ClassLabel]) -> Vec<String> {
    let mut covered: Vec<String> = classes
        .iter()
        .flat_map(|c| &c.members)
        .filter(|m| family.covers(m.format))
        .map(|m| m.format.to_string())
        .collect();
    covered.sort();
    covered.dedup();
    covered
}

fn claimed_text(claim: &PlatformPattern, d: Dimension, classes: &[ClassLabel]) -> String {
    let field = claim.get(d).unwrap_or("*").to_string();
    match (d, claim.format_family()) {
        (Dimension::Format, Some(family)) => {
            let covered = family_members(family, classes);
            if covered.is_empty() {
                format!("{field} (covers no known class)")
            } else if covered == [field.clone()] {
                field
            } else {
                format!("{field} = {}", covered.join(", "))
            }
        }
        _ => field,
    }
}

/// Per class, whether a member satisfies the claim on dimension `d`.
pub fn on_claim(claim: &PlatformPattern, d: Dimension, classes: &[ClassLabel]) -> Vec<bool> {
    classes
        .iter()
        .map(|c| c.members.iter().any(|m| claim.matches_dimension(d, m)))
        .collect()
}

/// The best class the claim gets wrong on `d` against the best class it gets right on `d`; None
/// when the known classes do not differ there.
pub fn dimension_llr(
    claim: &PlatformPattern,
    d: Dimension,
    classes: &[ClassLabel],
    cumulative: &[f64],
) -> Option<f64> {
    llr_between(&on_claim(claim, d, classes), cumulative)
}

/// The best score of a class off the claim (`on` false) against the best on it; None unless
/// there are both.
pub fn llr_between(on: &[bool], cumulative: &[f64]) -> Option<f64> {
    let best = |want: bool| {
        on.iter()
            .zip(cumulative)
            .filter(|(o, _)| **o == want)
            .map(|(_, v)| *v)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    (on.contains(&false) && on.contains(&true)).then(|| best(false) - best(true))
}

/// The format dimension as the verifier decided it from format evidence of its own (references
/// that cover every class's format): its ratio, the format the answers are (a known one, or one
/// no reference covers) and why it cannot be confirmed, where it cannot.
#[derive(Debug, Clone, PartialEq)]
pub struct FormatDecision {
    /// The best format off the claim against the best on it, summed answer by answer (nats);
    /// None when the known classes do not differ on the format.
    pub llr: Option<f64>,
    /// What the answers' format is (`q8_0 (int8)`, or a format no reference covers), in words
    /// that compare from round to round.
    pub nearest: String,
    /// The answers are a format no reference covers.
    pub unseen: bool,
    /// The figures behind `nearest` where the answers are not simply a known format.
    pub detail: Option<String>,
    /// Why the claimed format is not confirmed although its ratio says so.
    pub unconfirmed: Option<String>,
    /// Why the claimed format is not accused although its ratio says so.
    pub unaccused: Option<String>,
}

/// The sequential test's thresholds: Wald's, and the format evidence's own accusing one (see
/// `VerifyParams::format_accuse_threshold`).
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub accuse: f64,
    pub accept: f64,
    pub format_accuse: f64,
}

/// The verdict on each dimension the claim names. `cumulative` holds each class's summed
/// log-likelihood; `format` the format dimension's own decision where the format evidence
/// tolerates a change of hardware or build (else it is decided on `cumulative` like the others);
/// `unknown` says the overall test found the answers unlike every known class.
pub fn dimension_verdicts(
    claim: &PlatformPattern,
    classes: &[ClassLabel],
    cumulative: &[f64],
    format: Option<&FormatDecision>,
    t: Thresholds,
    unknown: bool,
) -> Vec<DimensionVerdict> {
    let best_class = hspi_datasets::top_label(cumulative);
    claim
        .claimed()
        .into_iter()
        .map(|d| {
            let on = on_claim(claim, d, classes);
            let referenced = on.contains(&true);
            let own = format.filter(|_| d == Dimension::Format);
            let llr = match own {
                Some(f) => f.llr,
                None => llr_between(&on, cumulative),
            };
            // The format is weighed by evidence that tolerates a change of hardware or build, so
            // it is decided even when the answers match no known class exactly; the other
            // dimensions are then unknown.
            let accuse = if d == Dimension::Format {
                t.format_accuse
            } else {
                t.accuse
            };
            let decided = |v: f64| {
                if v >= accuse {
                    Some(DimensionStatus::Mismatch)
                } else if v <= t.accept {
                    Some(DimensionStatus::Consistent)
                } else {
                    None
                }
            };
            let (status, note) = match llr {
                _ if !referenced => (
                    DimensionStatus::Inconclusive,
                    Some(format!(
                        "no known class has this {d}: hspi can neither confirm nor refute it without a reference for it"
                    )),
                ),
                Some(v)
                    if d == Dimension::Format
                        && decided(v) == Some(DimensionStatus::Consistent)
                        && own.is_some_and(|f| f.unconfirmed.is_some()) =>
                {
                    (
                        DimensionStatus::Inconclusive,
                        own.and_then(|f| f.unconfirmed.clone()),
                    )
                }
                Some(v)
                    if d == Dimension::Format
                        && decided(v) == Some(DimensionStatus::Mismatch)
                        && own.is_some_and(|f| f.unaccused.is_some()) =>
                {
                    (
                        DimensionStatus::Inconclusive,
                        own.and_then(|f| f.unaccused.clone()),
                    )
                }
                Some(v) if d == Dimension::Format && decided(v).is_some() => (
                    decided(v).expect("checked"),
                    own.and_then(|f| f.detail.clone()),
                ),
                Some(_) if unknown && d == Dimension::Format => (
                    DimensionStatus::Inconclusive,
                    Some("the answers match no known class, and the format evidence does not separate the nearest formats".into()),
                ),
                _ if unknown => (
                    DimensionStatus::Unknown,
                    Some("the answers match no known class".into()),
                ),
                Some(v) => (
                    decided(v).unwrap_or(DimensionStatus::Inconclusive),
                    own.and_then(|f| f.detail.clone()),
                ),
                // Every reference in the claimed format: nothing tells it from a format near it.
                None if d == Dimension::Format => (
                    DimensionStatus::Inconclusive,
                    Some("every reference is in this format: none in another to tell it from".into()),
                ),
                None => (
                    DimensionStatus::Consistent,
                    Some(format!("every known class has this {d}")),
                ),
            };
            let mut nearest: Vec<String> = match own {
                Some(f) => vec![f.nearest.clone()],
                None => best_class
                    .map(|c| classes[c].members.iter().map(|m| shown(d, m)).collect())
                    .unwrap_or_default(),
            };
            nearest.sort();
            nearest.dedup();
            DimensionVerdict {
                dimension: d,
                claimed: claimed_text(claim, d, classes),
                status,
                nearest: nearest.join(" or "),
                log_likelihood_ratio: llr,
                note,
                unseen: own.is_some_and(|f| f.unseen),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(id: &str, platform: &str) -> ClassLabel {
        ClassLabel {
            id: id.into(),
            members: vec![platform.parse().unwrap()],
            repeats: None,
        }
    }

    fn classes() -> Vec<ClassLabel> {
        vec![
            class("E1", "cpu-avx2/llamacpp-1/f16/bs1"),
            class("E2", "cpu-avx2/llamacpp-1/q8_0/bs1"),
            class("E3", "cpu-avx512/llamacpp-1/f16/bs1"),
        ]
    }

    const THRESHOLDS: Thresholds = Thresholds {
        accuse: 4.6,
        accept: -4.6,
        format_accuse: 4.6,
    };

    #[test]
    fn the_format_can_be_settled_while_the_hardware_is_not() {
        let claim: PlatformPattern = "cpu-avx2/llamacpp/f16/*".parse().unwrap();
        // The two f16 builds are alike, the q8_0 class far away.
        let v = dimension_verdicts(
            &claim,
            &classes(),
            &[0.0, -20.0, -1.0],
            None,
            THRESHOLDS,
            false,
        );
        let by = |d: Dimension| v.iter().find(|x| x.dimension == d).unwrap();
        assert_eq!(by(Dimension::Format).status, DimensionStatus::Consistent);
        assert_eq!(
            by(Dimension::Hardware).status,
            DimensionStatus::Inconclusive
        );
        assert_eq!(by(Dimension::Engine).status, DimensionStatus::Consistent);
        assert_eq!(by(Dimension::Engine).log_likelihood_ratio, None);
        assert!(by(Dimension::Format)
            .line()
            .starts_with("format: consistent"));
    }

    #[test]
    fn a_mismatch_is_on_the_dimension_that_fails_and_int8_covers_q8_0() {
        let f16: PlatformPattern = "*/llamacpp/f16/*".parse().unwrap();
        let v = dimension_verdicts(
            &f16,
            &classes(),
            &[-20.0, 0.0, -20.0],
            None,
            THRESHOLDS,
            false,
        );
        assert_eq!(v.len(), 2, "engine and format are claimed");
        assert_eq!(v[1].status, DimensionStatus::Mismatch);
        assert_eq!(v[1].nearest, "q8_0 (int8)");
        let int8: PlatformPattern = "*/*/int8/*".parse().unwrap();
        let v = dimension_verdicts(
            &int8,
            &classes(),
            &[-20.0, 0.0, -20.0],
            None,
            THRESHOLDS,
            false,
        );
        assert_eq!(v[0].status, DimensionStatus::Consistent);
        assert_eq!(v[0].claimed, "int8 = q8_0");
        // Unlike every known class: the format is still decided, the rest is unknown.
        let v = dimension_verdicts(
            &int8,
            &classes(),
            &[0.0, -20.0, -20.0],
            None,
            THRESHOLDS,
            true,
        );
        assert_eq!(v[0].status, DimensionStatus::Mismatch);
        assert_eq!(v[0].nearest, "f16 (fp16)");
        let v = dimension_verdicts(
            &f16,
            &classes(),
            &[0.0, -20.0, -1.0],
            None,
            THRESHOLDS,
            true,
        );
        assert_eq!(v[0].status, DimensionStatus::Unknown, "engine");
        assert_eq!(v[1].status, DimensionStatus::Consistent, "format");
    }

    #[test]
    fn a_format_ratio_that_cannot_be_confirmed_is_inconclusive_and_names_what_the_answers_are() {
        let int8: PlatformPattern = "*/*/int8/*".parse().unwrap();
        let decision = FormatDecision {
            llr: Some(-9.0),
            nearest: "a format no reference covers".into(),
            unseen: true,
            detail: None,
            unconfirmed: Some("the answers lack q8_0's pattern".into()),
            unaccused: None,
        };
        let v = dimension_verdicts(
            &int8,
            &classes(),
            &[-20.0, 0.0, -20.0],
            Some(&decision),
            THRESHOLDS,
            false,
        );
        assert_eq!(v[0].status, DimensionStatus::Inconclusive);
        assert_eq!(v[0].nearest, "a format no reference covers");
        assert_eq!(
            v[0].note.as_deref(),
            Some("the answers lack q8_0's pattern")
        );
        assert!(v[0].unseen);
        let v = dimension_verdicts(
            &int8,
            &classes(),
            &[-20.0, 0.0, -20.0],
            Some(&FormatDecision {
                unconfirmed: None,
                ..decision
            }),
            THRESHOLDS,
            false,
        );
        assert_eq!(v[0].status, DimensionStatus::Consistent);
    }
}
