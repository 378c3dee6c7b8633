//! Open-set rejection: an answer unlike every known class is "unknown platform", not the nearest
//! label. Each class is profiled (per-feature mean and spread in standardised units); an answer's
//! score is its mean squared standardised distance to the predicted class's profile. The
//! threshold is calibrated by holding classes out: scores of held-out known answers against their
//! own class versus scores of a left-out class against the nearest remaining one.

use ndarray::{Array2, Axis};
use serde::{Deserialize, Serialize};

/// Spreads below this (in standardised units) are floored: a feature constant within a class
/// should make a different value far, not infinitely far.
const SPREAD_FLOOR: f64 = 0.1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub mean: Vec<f64>,
    pub spread: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenSet {
    pub profiles: Vec<Option<Profile>>,
    pub threshold: f64,
    /// Out-of-fold known answers scored above the threshold (one query each).
    pub known_rejected: f64,
    /// Left-out-class answers scored at or below it (one query each).
    pub unknown_accepted: f64,
}

impl Profile {
    fn of(z: &Array2<f64>, rows: &[usize]) -> Option<Profile> {
        if rows.is_empty() {
            return None;
        }
        let sub = z.select(Axis(0), rows);
        let mean = sub.mean_axis(Axis(0))?.to_vec();
        let spread = sub
            .std_axis(Axis(0), 0.0)
            .iter()
            .map(|s| s.max(SPREAD_FLOOR))
            .collect();
        Some(Profile { mean, spread })
    }

    pub fn score(&self, z: &[f64]) -> f64 {
        let d: f64 = z
            .iter()
            .zip(&self.mean)
            .zip(&self.spread)
            .map(|((v, m), s)| ((v - m) / s).powi(2))
            .sum();
        (1.0 + d / z.len().max(1) as f64).ln()
    }
}

fn profiles(z: &Array2<f64>, y: &[usize], rows: &[usize], classes: usize) -> Vec<Option<Profile>> {
    (0..classes)
        .map(|c| {
            let of_c: Vec<usize> = rows.iter().copied().filter(|i| y[*i] == c).collect();
            Profile::of(z, &of_c)
        })
        .collect()
}

fn nearest(profiles: &[Option<Profile>], z: &[f64]) -> f64 {
    profiles
        .iter()
        .flatten()
        .map(|p| p.score(z))
        .fold(f64::INFINITY, f64::min)
}

impl OpenSet {
    /// `z`: standardised training features; `fold_of`: the validation fold of each row.
    pub fn calibrate(z: &Array2<f64>, y: &[usize], fold_of: &[usize], classes: usize) -> OpenSet {
        let all: Vec<usize> = (0..y.len()).collect();
        let folds = fold_of.iter().max().map_or(1, |m| m + 1);
        let mut known = Vec::new();
        for k in 0..folds {
            let train: Vec<usize> = all.iter().copied().filter(|i| fold_of[*i] != k).collect();
            let p = profiles(z, y, &train, classes);
            for i in all.iter().filter(|i| fold_of[**i] == k) {
                if let Some(own) = &p[y[*i]] {
                    known.push(own.score(&z.row(*i).to_vec()));
                }
            }
        }
        let mut unknown = Vec::new();
        for c in 0..classes {
            let others: Vec<usize> = all.iter().copied().filter(|i| y[*i] != c).collect();
            let p = profiles(z, y, &others, classes);
            for i in all.iter().filter(|i| y[**i] == c) {
                unknown.push(nearest(&p, &z.row(*i).to_vec()));
            }
        }
        let (threshold, known_rejected, unknown_accepted) = choose_threshold(&known, &unknown);
        OpenSet {
            profiles: profiles(z, y, &all, classes),
            threshold,
            known_rejected,
            unknown_accepted,
        }
    }

    pub fn score(&self, class: usize, z: &[f64]) -> f64 {
        self.profiles
            .get(class)
            .and_then(Option::as_ref)
            .map_or(f64::INFINITY, |p| p.score(z))
    }
}

/// The threshold with the fewest errors of both kinds; between the two nearest scores that
/// achieve it, the midpoint (so neither side sits on the edge).
fn choose_threshold(known: &[f64], unknown: &[f64]) -> (f64, f64, f64) {
    let mut cands: Vec<f64> = known
        .iter()
        .chain(unknown)
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    cands.sort_by(f64::total_cmp);
    cands.dedup();
    if cands.is_empty() {
        return (f64::INFINITY, 0.0, 1.0);
    }
    let rates = |t: f64| {
        let kr = known.iter().filter(|s| **s > t).count() as f64 / known.len().max(1) as f64;
        let ua = unknown.iter().filter(|s| **s <= t).count() as f64 / unknown.len().max(1) as f64;
        (kr, ua)
    };
    let mut best = (f64::INFINITY, 0usize);
    for (i, t) in cands.iter().enumerate() {
        let (kr, ua) = rates(*t);
        // Rejecting a known platform is the costlier error for an auditor: weigh it double.
        let cost = 2.0 * kr + ua;
        if cost < best.0 {
            best = (cost, i);
        }
    }
    let lo = cands[best.1];
    let t = cands
        .get(best.1 + 1)
        .map_or(lo * 1.5 + 1.0, |hi| (lo + hi) / 2.0);
    let (kr, ua) = rates(t);
    (t, kr, ua)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_out_cluster_scores_above_the_threshold() {
        let mut rows = Vec::new();
        let mut y = Vec::new();
        for i in 0..90 {
            let c = i % 3;
            let jitter = (i / 3) as f64 * 0.001;
            rows.extend([c as f64 * 5.0 + jitter, -(c as f64) * 5.0 - jitter]);
            y.push(c);
        }
        let z = Array2::from_shape_vec((90, 2), rows).unwrap();
        let folds: Vec<usize> = (0..90).map(|i| (i / 3) % 5).collect();
        let o = OpenSet::calibrate(&z, &y, &folds, 3);
        assert_eq!((o.known_rejected, o.unknown_accepted), (0.0, 0.0), "{o:?}");
        assert!(o.score(0, &[0.0, 0.0]) <= o.threshold);
        assert!(
            o.score(0, &[2.5, -2.5]) > o.threshold,
            "halfway between classes is unknown"
        );
    }
}
