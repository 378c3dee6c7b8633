//! How an endpoint shows its answers: exact logprobs, logprobs rounded to a grid (fp16, bf16,
//! k decimals), or text alone. Detected from the answers themselves; references are shown the
//! same way before they are compared, so rounding by an API is never taken for tampering.

use std::fmt;
use std::str::FromStr;

use crate::record::{Logprob, Outputs};

/// The grid an endpoint prints logprobs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grid {
    /// bfloat16: 8 significant bits.
    Bf16,
    /// IEEE half: 11 significant bits.
    Fp16,
    /// k digits after the decimal point.
    Decimals(u8),
}

/// Most decimals a printed grid is recognised at (f32 prints need 9 significant digits).
const MOST_DECIMALS: u8 = 6;

impl Grid {
    /// `v` shown on this grid, as the f32 nearest the printed value.
    pub fn round(self, v: f32) -> f32 {
        match self {
            Grid::Bf16 => half::bf16::from_f32(v).to_f32(),
            Grid::Fp16 => half::f16::from_f32(v).to_f32(),
            Grid::Decimals(k) => format!("{:.*}", usize::from(k), f64::from(v))
                .parse()
                .unwrap_or(v),
        }
    }

    /// Whether a printed logprob lies on this grid.
    pub fn holds(self, lp: &Logprob) -> bool {
        match self {
            Grid::Bf16 | Grid::Fp16 => lp.exact_f32 && self.round(lp.value()) == lp.value(),
            Grid::Decimals(k) => printed_decimals(&lp.text).is_some_and(|d| d <= u32::from(k)),
        }
    }

    /// Variance the rounding adds to a value of magnitude `v` (uniform over one step).
    pub fn variance(self, v: f32) -> f64 {
        let step = match self {
            Grid::Bf16 | Grid::Fp16 => {
                let bits = if self == Grid::Bf16 { 8 } else { 11 };
                let e = f64::from(v.abs().max(f32::MIN_POSITIVE)).log2().floor();
                2f64.powf(e - f64::from(bits - 1))
            }
            Grid::Decimals(k) => 10f64.powi(-i32::from(k)),
        };
        step * step / 12.0
    }

    /// Every grid, coarsest first (the order they are tried in).
    fn candidates() -> impl Iterator<Item = Grid> {
        (1..=3)
            .map(Grid::Decimals)
            .chain([Grid::Bf16])
            .chain((4..=MOST_DECIMALS).map(Grid::Decimals))
            .chain([Grid::Fp16])
    }
}

/// Digits after the decimal point of a printed number (`-1.25e-2` has 4); None for no number.
fn printed_decimals(text: &str) -> Option<u32> {
    let t = text.trim().trim_start_matches(['-', '+']);
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().ok()?),
        None => (t, 0),
    };
    let fraction = mantissa.split_once('.').map_or("", |(_, f)| f);
    let fraction = fraction.trim_end_matches('0');
    Some((fraction.len() as i32 - exponent).max(0) as u32)
}

/// What an endpoint's answers show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Presentation {
    /// Every logprob as an exact f32 (llama.cpp prints 17 digits).
    #[default]
    Exact,
    /// Logprobs rounded to a grid by the API.
    Rounded(Grid),
    /// The generated text alone.
    TextOnly,
}

impl Presentation {
    /// What one answer shows: text only when it carries no logprob, else the coarsest grid
    /// every value lies on, else exact. None when too few values are informative to tell
    /// (values on every grid, like 0 or −0.5).
    pub fn detect(outputs: &Outputs) -> Option<Presentation> {
        let Outputs::Completion { steps, .. } = outputs else {
            return Some(Presentation::Exact);
        };
        let values: Vec<&Logprob> = steps
            .iter()
            .flat_map(|s| s.logprob.iter().chain(s.top.iter().map(|t| &t.logprob)))
            .collect();
        if values.is_empty() {
            return Some(Presentation::TextOnly);
        }
        // A value on the coarsest grid says nothing about which grid printed it.
        let informative = values
            .iter()
            .filter(|v| !Grid::Decimals(1).holds(v))
            .count();
        if informative < 2 {
            return None;
        }
        Some(
            Grid::candidates()
                .find(|g| values.iter().all(|v| g.holds(v)))
                .map_or(Presentation::Exact, Presentation::Rounded),
        )
    }

    /// `outputs` as this presentation shows them: logprobs rounded to its grid, or dropped.
    pub fn show(self, outputs: &Outputs) -> Outputs {
        let Outputs::Completion {
            text,
            steps,
            finish_reason,
        } = outputs
        else {
            return outputs.clone();
        };
        let steps = match self {
            Presentation::Exact => steps.clone(),
            Presentation::TextOnly => Vec::new(),
            Presentation::Rounded(g) => {
                let round = |lp: &Logprob| {
                    let v = g.round(lp.value());
                    let text = match g {
                        Grid::Decimals(k) => format!("{:.*}", usize::from(k), f64::from(v)),
                        _ => format!("{:.17e}", f64::from(v)),
                    };
                    Logprob::parse(&text).expect("a finite rounded value")
                };
                steps
                    .iter()
                    .map(|s| {
                        let mut s = s.clone();
                        s.logprob = s.logprob.as_ref().map(round);
                        for t in &mut s.top {
                            t.logprob = round(&t.logprob);
                        }
                        s
                    })
                    .collect()
            }
        };
        Outputs::Completion {
            text: text.clone(),
            steps,
            finish_reason: finish_reason.clone(),
        }
    }

    /// How little of an answer it shows: exact 0, rounded 1, text only 2.
    pub fn coarseness(self) -> u8 {
        match self {
            Presentation::Exact => 0,
            Presentation::Rounded(_) => 1,
            Presentation::TextOnly => 2,
        }
    }

    /// How a report says it: "exact logprobs", "logprobs rounded to fp16", "text only".
    pub fn describe(self) -> String {
        match self {
            Presentation::Exact => "exact logprobs".into(),
            Presentation::Rounded(Grid::Decimals(k)) => {
                format!("logprobs rounded to {k} decimals")
            }
            Presentation::Rounded(g) => format!("logprobs rounded to {g}"),
            Presentation::TextOnly => "text only (no logprobs)".into(),
        }
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grid::Bf16 => f.write_str("bf16"),
            Grid::Fp16 => f.write_str("fp16"),
            Grid::Decimals(k) => write!(f, "{k}dp"),
        }
    }
}

impl fmt::Display for Presentation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Presentation::Exact => f.write_str("exact"),
            Presentation::Rounded(g) => write!(f, "rounded:{g}"),
            Presentation::TextOnly => f.write_str("text-only"),
        }
    }
}

/// A presentation name that is none of `exact`, `text-only`, `rounded:GRID`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown presentation '{0}' (known: exact, text-only, rounded:fp16, rounded:bf16, rounded:Ndp with N in 1..={MOST_DECIMALS})")]
pub struct PresentationParseError(pub String);

impl FromStr for Grid {
    type Err = PresentationParseError;
    fn from_str(s: &str) -> Result<Grid, PresentationParseError> {
        let bad = || PresentationParseError(s.to_string());
        match s {
            "fp16" | "f16" => Ok(Grid::Fp16),
            "bf16" => Ok(Grid::Bf16),
            _ => {
                let k: u8 = s
                    .strip_suffix("dp")
                    .ok_or_else(bad)?
                    .parse()
                    .map_err(|_| bad())?;
                (1..=MOST_DECIMALS)
                    .contains(&k)
                    .then_some(Grid::Decimals(k))
                    .ok_or_else(bad)
            }
        }
    }
}

impl FromStr for Presentation {
    type Err = PresentationParseError;
    fn from_str(s: &str) -> Result<Presentation, PresentationParseError> {
        match s {
            "exact" => Ok(Presentation::Exact),
            "text-only" => Ok(Presentation::TextOnly),
            _ => s
                .strip_prefix("rounded:")
                .ok_or_else(|| PresentationParseError(s.to_string()))?
                .parse()
                .map(Presentation::Rounded)
                .map_err(|_| PresentationParseError(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{TokenStep, TopEntry};

    fn answer(values: &[f32]) -> Outputs {
        let lp = |v: f32| Logprob::parse(&format!("{:.17e}", f64::from(v))).unwrap();
        Outputs::Completion {
            text: "ab".into(),
            steps: values
                .chunks(2)
                .map(|c| TokenStep {
                    token: "a".into(),
                    id: Some(1),
                    bytes: None,
                    logprob: Some(lp(c[0])),
                    top: c
                        .iter()
                        .map(|v| TopEntry {
                            token: "a".into(),
                            id: Some(1),
                            logprob: lp(*v),
                        })
                        .collect(),
                })
                .collect(),
            finish_reason: None,
        }
    }

    #[test]
    fn names_round_trip() {
        for p in [
            Presentation::Exact,
            Presentation::TextOnly,
            Presentation::Rounded(Grid::Fp16),
            Presentation::Rounded(Grid::Bf16),
            Presentation::Rounded(Grid::Decimals(4)),
        ] {
            assert_eq!(p.to_string().parse::<Presentation>().unwrap(), p);
        }
        for bad in ["rounded:9dp", "rounded:0dp", "rounded", "fp16", "text"] {
            let e = bad.parse::<Presentation>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("text-only"), "{e}");
        }
    }

    #[test]
    fn the_grid_is_read_from_the_answers() {
        let exact = answer(&[-0.123_456_79, -2.518_27, -3.531_592_7, -9.876_543]);
        assert_eq!(Presentation::detect(&exact), Some(Presentation::Exact));
        for p in [
            Presentation::Rounded(Grid::Fp16),
            Presentation::Rounded(Grid::Bf16),
            Presentation::Rounded(Grid::Decimals(4)),
            Presentation::Rounded(Grid::Decimals(2)),
            Presentation::TextOnly,
        ] {
            let shown = p.show(&exact);
            assert_eq!(Presentation::detect(&shown), Some(p), "{p}");
            assert_eq!(p.show(&shown), shown, "{p}: showing twice changes nothing");
        }
        // Values on every grid tell nothing.
        assert_eq!(Presentation::detect(&answer(&[0.0, -0.5])), None);
        assert_eq!(printed_decimals("-1.25e-2"), Some(4));
        assert_eq!(printed_decimals("-0.1230"), Some(3));
        assert_eq!(printed_decimals("-2"), Some(0));
    }

    #[test]
    fn rounding_noise_scales_with_the_step() {
        assert!(Grid::Fp16.variance(-4.0) > Grid::Fp16.variance(-0.5));
        assert!(Grid::Bf16.variance(-1.0) > Grid::Fp16.variance(-1.0));
        assert!((Grid::Decimals(4).variance(-3.0) - 1e-8 / 12.0).abs() < 1e-20);
    }
}
