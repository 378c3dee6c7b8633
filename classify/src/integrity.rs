//! Integrity of API answers: properties every known computation's answers have (logprobs printed
//! as exact f32, the sampled token's logprob equal to its own top-list entry, top lists sorted,
//! no positive logprob). An answer breaking one that every known class keeps was altered on the
//! way — e.g. noise added to the logprobs, or values rounded to a few digits.

use hspi_datasets::{Outputs, Record};
use serde::{Deserialize, Serialize};

/// Fraction of a class's training answers that keep each property.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntegrityProfile {
    pub exact_f32: f64,
    pub sampled_matches_top: f64,
    pub sorted: f64,
}

/// Which properties one answer keeps (`None`: the answer carries nothing to check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checks {
    pub exact_f32: Option<bool>,
    pub sampled_matches_top: Option<bool>,
    pub sorted: Option<bool>,
    pub non_positive: Option<bool>,
}

pub fn check(record: &Record) -> Checks {
    let Outputs::Completion { steps, .. } = &record.outputs else {
        return Checks {
            exact_f32: None,
            sampled_matches_top: None,
            sorted: None,
            non_positive: None,
        };
    };
    let values: Vec<_> = steps
        .iter()
        .flat_map(|s| s.logprob.iter().chain(s.top.iter().map(|t| &t.logprob)))
        .collect();
    let some = |b: bool| (!values.is_empty()).then_some(b);
    let mut compared = 0;
    let mut agree = true;
    for s in steps {
        if let Some(lp) = &s.logprob {
            let own = s.top.iter().find(|t| {
                (t.id.is_some() && t.id == s.id) || (t.id.is_none() && t.token == s.token)
            });
            if let Some(t) = own {
                compared += 1;
                agree &= t.logprob.f32_bits == lp.f32_bits;
            }
        }
    }
    Checks {
        exact_f32: some(values.iter().all(|v| v.exact_f32)),
        sampled_matches_top: (compared > 0).then_some(agree),
        sorted: some(steps.iter().all(|s| {
            s.top
                .windows(2)
                .all(|w| w[0].logprob.value() >= w[1].logprob.value())
        })),
        non_positive: some(values.iter().all(|v| v.value() <= 0.0)),
    }
}

impl IntegrityProfile {
    pub fn of<'a>(records: impl IntoIterator<Item = &'a Record>) -> IntegrityProfile {
        let (mut n, mut e, mut s, mut o) = (0usize, 0usize, 0usize, 0usize);
        let mut sampled_n = 0usize;
        for r in records {
            let c = check(r);
            if let (Some(ex), Some(so)) = (c.exact_f32, c.sorted) {
                n += 1;
                e += usize::from(ex);
                o += usize::from(so);
            }
            if let Some(m) = c.sampled_matches_top {
                sampled_n += 1;
                s += usize::from(m);
            }
        }
        let frac = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        IntegrityProfile {
            exact_f32: frac(e, n),
            sampled_matches_top: frac(s, sampled_n),
            sorted: frac(o, n),
        }
    }
}

/// One integrity property; an evidence mode says which apply to its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// No positive logprob (a probability above 1).
    NonPositive,
    /// Logprobs printed as exact f32 values.
    ExactF32,
    /// The sampled token's logprob equals its own top-list entry.
    SampledMatchesTop,
    /// Top lists in order.
    Sorted,
}

/// The properties among `applied` this answer breaks that every profiled class always keeps.
pub fn violations(
    record: &Record,
    profiles: &[IntegrityProfile],
    applied: &[Check],
) -> Vec<&'static str> {
    if profiles.is_empty() {
        return Vec::new();
    }
    let all = |f: fn(&IntegrityProfile) -> f64| profiles.iter().all(|p| f(p) == 1.0);
    let c = check(record);
    let mut out = Vec::new();
    for rule in applied {
        let (broken, message) = match rule {
            Check::NonPositive => (
                c.non_positive == Some(false),
                "a positive logprob (a probability above 1)",
            ),
            Check::ExactF32 => (
                c.exact_f32 == Some(false) && all(|p| p.exact_f32),
                "logprobs that are not exact f32 values, which every known engine prints",
            ),
            Check::SampledMatchesTop => (
                c.sampled_matches_top == Some(false) && all(|p| p.sampled_matches_top),
                "a sampled token's logprob that differs from its own top-list entry",
            ),
            Check::Sorted => (
                c.sorted == Some(false) && all(|p| p.sorted),
                "a top-logprob list out of order",
            ),
        };
        if broken {
            out.push(message);
        }
    }
    out
}
