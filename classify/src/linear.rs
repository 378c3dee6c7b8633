//! Multinomial logistic regression (linfa-logistic) on standardised features, with the L2
//! strength chosen by k-fold validation grouped by probe: a probe never sits in both the fold
//! that trains and the fold that validates, so the score measures unseen probes.

use hspi_datasets::top_label;
use linfa::prelude::*;
use linfa_logistic::MultiLogisticRegression;
use ndarray::{Array1, Array2, Axis};
use serde::{Deserialize, Serialize};

use crate::error::ClassifyError;

/// A fitted linear model, self-contained (no linfa types) so it persists as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearModel {
    pub mean: Vec<f64>,
    pub scale: Vec<f64>,
    /// `weights[class][feature]`, over the model's class indices 0..n.
    pub weights: Vec<Vec<f64>>,
    pub intercept: Vec<f64>,
    pub alpha: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainParams {
    pub folds: usize,
    pub alphas: Vec<f64>,
    pub max_iterations: u64,
}

impl Default for TrainParams {
    fn default() -> Self {
        TrainParams {
            folds: 5,
            alphas: vec![0.01, 0.1, 1.0, 10.0],
            max_iterations: 200,
        }
    }
}

impl TrainParams {
    /// From the `--folds` and `--alphas a,b,c` flags, checked.
    pub fn from_flags(folds: usize, alphas: &str) -> Result<TrainParams, ClassifyError> {
        let alphas = alphas
            .split(',')
            .map(|a| {
                a.trim()
                    .parse::<f64>()
                    .map_err(|_| ClassifyError::Param(format!("--alphas: '{a}' is not a number")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let p = TrainParams {
            folds,
            alphas,
            ..TrainParams::default()
        };
        p.validate()?;
        Ok(p)
    }

    /// Checked before any fitting, so a bad flag fails in milliseconds.
    pub fn validate(&self) -> Result<(), ClassifyError> {
        if self.folds < 2 {
            return Err(ClassifyError::Param(format!(
                "--folds {} is too few: validation needs at least 2",
                self.folds
            )));
        }
        if self.alphas.is_empty() || self.alphas.iter().any(|a| !(a.is_finite() && *a > 0.0)) {
            return Err(ClassifyError::Param(format!(
                "regularisation strengths {:?} must be positive and finite",
                self.alphas
            )));
        }
        if self.max_iterations == 0 {
            return Err(ClassifyError::Param(
                "--max-iterations must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// What validation chose and measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    pub alpha: f64,
    /// Per alpha tried: out-of-fold accuracy (one query per decision).
    pub scores: Vec<(f64, f64)>,
}

/// Column mean and scale; constant columns get scale 1 so they standardise to 0.
pub fn standardiser(x: &Array2<f64>) -> (Vec<f64>, Vec<f64>) {
    let mean = x
        .mean_axis(Axis(0))
        .unwrap_or_else(|| Array1::zeros(x.ncols()));
    let std = x.std_axis(Axis(0), 0.0);
    let scale = std
        .iter()
        .map(|s| if *s > 1e-12 { *s } else { 1.0 })
        .collect();
    (mean.to_vec(), scale)
}

pub fn standardise(x: &Array2<f64>, mean: &[f64], scale: &[f64]) -> Array2<f64> {
    let mut z = x.clone();
    for mut row in z.rows_mut() {
        for ((v, m), s) in row.iter_mut().zip(mean).zip(scale) {
            *v = (*v - m) / s;
        }
    }
    z
}

/// Fit at one alpha. `classes` is the number of labels; every label must occur in `y`.
pub fn fit(
    x: &Array2<f64>,
    y: &[usize],
    classes: usize,
    alpha: f64,
    max_iterations: u64,
) -> Result<LinearModel, ClassifyError> {
    let mut present: Vec<usize> = y.to_vec();
    present.sort_unstable();
    present.dedup();
    if present.len() < 2 {
        return Err(ClassifyError::TooFewClasses {
            found: present.len(),
        });
    }
    let (mean, scale) = standardiser(x);
    // f32 halves the work of every product; the features are bits and small summaries, and
    // standardised values lose nothing a linear boundary needs.
    let z = standardise(x, &mean, &scale).mapv(|v| v as f32);
    let dataset = Dataset::new(z, Array1::from(y.to_vec()));
    let fitted = MultiLogisticRegression::default()
        .alpha(alpha as f32)
        .max_iterations(max_iterations)
        // The loss is a sum over answers: stop when the mean gradient is small, not the sum.
        .gradient_tolerance(1e-3 * y.len() as f32)
        .fit(&dataset)
        .map_err(|e| ClassifyError::Fit(e.to_string()))?;
    // Labels absent from `y` get a very low intercept: never predicted.
    let mut weights = vec![vec![0.0; x.ncols()]; classes];
    let mut intercept = vec![-1e6; classes];
    for (col, label) in fitted.classes().iter().enumerate() {
        weights[*label] = fitted
            .params()
            .column(col)
            .iter()
            .map(|w| f64::from(*w))
            .collect();
        intercept[*label] = f64::from(fitted.intercept()[col]);
    }
    Ok(LinearModel {
        mean,
        scale,
        weights,
        intercept,
        alpha,
    })
}

impl LinearModel {
    /// Log posterior over classes for one feature vector.
    pub fn log_proba(&self, features: &[f64]) -> Vec<f64> {
        let z: Vec<f64> = features
            .iter()
            .zip(&self.mean)
            .zip(&self.scale)
            .map(|((v, m), s)| (v - m) / s)
            .collect();
        let logits: Vec<f64> = self
            .weights
            .iter()
            .zip(&self.intercept)
            .map(|(w, b)| b + w.iter().zip(&z).map(|(a, b)| a * b).sum::<f64>())
            .collect();
        log_softmax(&logits)
    }
}

pub fn log_softmax(v: &[f64]) -> Vec<f64> {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln();
    v.iter().map(|x| x - lse).collect()
}

/// Fold of each sample: samples of one probe share a fold.
pub fn folds_by_group(groups: &[String], folds: usize) -> Vec<usize> {
    let mut names: Vec<&String> = groups.iter().collect();
    names.sort();
    names.dedup();
    groups
        .iter()
        .map(|g| names.binary_search(&g).unwrap_or(0) % folds)
        .collect()
}

/// Above this many feature values, alpha is chosen on one held-out fold instead of all k: the
/// full k-fold search on 10 000 x 3 200 took five minutes here; one fold at half the iterations
/// takes 39 s including the final fit.
const LARGE: usize = 8_000_000;

fn validation_rounds(x: &Array2<f64>, folds: usize) -> usize {
    if x.len() > LARGE {
        1
    } else {
        folds
    }
}

/// Validation only ranks strengths: on large sets half the iterations rank them as well.
fn validation_iterations(x: &Array2<f64>, params: &TrainParams) -> u64 {
    if x.len() > LARGE {
        (params.max_iterations / 2).max(1)
    } else {
        params.max_iterations
    }
}

/// Choose alpha by grouped k-fold validation, then fit on everything.
pub fn train(
    x: &Array2<f64>,
    y: &[usize],
    groups: &[String],
    classes: usize,
    params: &TrainParams,
) -> Result<(LinearModel, Validation), ClassifyError> {
    params.validate()?;
    let fold_of = folds_by_group(groups, params.folds);
    let mut scores = Vec::new();
    // One strength given: nothing to choose, so no validation fits.
    let tried = if params.alphas.len() > 1 {
        &params.alphas[..]
    } else {
        &[]
    };
    for &alpha in tried {
        let (mut right, mut total) = (0usize, 0usize);
        for k in 0..validation_rounds(x, params.folds) {
            let train_idx: Vec<usize> = (0..y.len()).filter(|i| fold_of[*i] != k).collect();
            let test_idx: Vec<usize> = (0..y.len()).filter(|i| fold_of[*i] == k).collect();
            if test_idx.is_empty() || train_idx.is_empty() {
                continue;
            }
            let xt = x.select(Axis(0), &train_idx);
            let yt: Vec<usize> = train_idx.iter().map(|i| y[*i]).collect();
            let m = fit(&xt, &yt, classes, alpha, validation_iterations(x, params))?;
            for i in test_idx {
                let row = x.row(i).to_vec();
                right += usize::from(top_label(&m.log_proba(&row)).unwrap_or(0) == y[i]);
                total += 1;
            }
        }
        scores.push((alpha, right as f64 / total.max(1) as f64));
    }
    // Highest accuracy; among ties the strongest regularisation (the simplest model).
    let alpha = scores
        .iter()
        .fold(None::<(f64, f64)>, |best, &(a, s)| match best {
            Some((_, bs)) if bs > s => best,
            Some((ba, bs)) if bs == s && ba > a => best,
            _ => Some((a, s)),
        })
        .map_or(params.alphas[0], |b| b.0);
    let model = fit(x, y, classes, alpha, params.max_iterations)?;
    Ok((model, Validation { alpha, scores }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separable_classes_are_learned_and_bad_params_refused() {
        let mut rows = Vec::new();
        let mut y = Vec::new();
        let mut groups = Vec::new();
        for i in 0..60 {
            let c = i % 3;
            rows.extend([c as f64 + (i as f64 * 0.01), 1.0 - c as f64]);
            y.push(c);
            groups.push(format!("p{}", i / 3));
        }
        let x = Array2::from_shape_vec((60, 2), rows).unwrap();
        let (m, v) = train(&x, &y, &groups, 3, &TrainParams::default()).unwrap();
        assert!(v.scores.iter().any(|s| s.1 == 1.0), "{v:?}");
        assert_eq!(top_label(&m.log_proba(&[2.2, -1.0])).unwrap_or(0), 2);
        let bad = TrainParams {
            folds: 1,
            ..TrainParams::default()
        };
        assert!(train(&x, &y, &groups, 3, &bad)
            .unwrap_err()
            .to_string()
            .contains("--folds 1"));
    }
}
