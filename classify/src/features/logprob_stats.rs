//! Summary statistics of an API answer's logprobs: how many distinct values, the grid they sit
//! on, the sampled tokens' logprobs, and how full the top-k lists are.

use super::{all_values, Context, Extractor, FeatureSpec, View};

pub struct LogprobStats;

impl Extractor for LogprobStats {
    fn dim(&self, _spec: &FeatureSpec) -> usize {
        5
    }
    fn extract(&self, ctx: &Context, out: &mut Vec<f64>) {
        let mut values = all_values(ctx.answer);
        let n = values.len().max(1) as f64;
        values.sort_by(f32::total_cmp);
        values.dedup();
        let distinct = values.len() as f64 / n;
        let step = values
            .windows(2)
            .map(|w| f64::from(w[1]) - f64::from(w[0]))
            .filter(|d| *d > 0.0)
            .fold(f64::INFINITY, f64::min);
        let grid = if step.is_finite() {
            -step.log2() / 32.0
        } else {
            0.0
        };
        let (sampled, fullness) = match ctx.answer {
            View::Steps { steps, .. } if !steps.is_empty() => {
                let s: Vec<f64> = steps
                    .iter()
                    .filter_map(|s| s.value)
                    .map(f64::from)
                    .collect();
                let mean = s.iter().sum::<f64>() / s.len().max(1) as f64;
                let full = steps.iter().map(|s| s.top.len()).sum::<usize>() as f64
                    / (steps.len() * ctx.spec.width.max(1)) as f64;
                (mean, full)
            }
            _ => (0.0, 0.0),
        };
        out.extend([distinct, grid, sampled, fullness, (n + 1.0).log2() / 16.0]);
    }
}
