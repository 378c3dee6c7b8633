//! Value by value, the signed distance in ULPs to each reference (log-scaled): where the answer
//! leans above or below hspi's own recomputation, and by how much. Kernel variants that differ
//! by a few ULPs differ in this pattern, not in any summary.

use super::bits::grid_len;
use super::view::{log_ulps, shared_prefix, ulp_diff};
use super::{Context, Extractor, FeatureSpec, View};

pub struct UlpPattern;

impl Extractor for UlpPattern {
    fn dim(&self, spec: &FeatureSpec) -> usize {
        grid_len(spec) * spec.references.len()
    }
    fn extract(&self, ctx: &Context, out: &mut Vec<f64>) {
        let n = grid_len(ctx.spec);
        for r in ctx.references {
            let pairs = match r {
                Some(r) => aligned(ctx.answer, r, ctx.spec.steps, ctx.spec.width),
                None => vec![None; n],
            };
            out.extend(pairs.iter().map(|p| {
                p.map_or(0.0, |(a, b)| {
                    let d = ulp_diff(a, b);
                    d.signum() as f64 * log_ulps(d) / 32.0
                })
            }));
        }
    }
}

/// The answer's grid values paired with the reference's value for the same logit, or for the
/// same token at the same step while both generations share their prefix.
fn aligned(answer: &View, reference: &View, steps: usize, width: usize) -> Vec<Option<(f32, f32)>> {
    match (answer, reference) {
        (View::Logits(a), View::Logits(b)) => {
            (0..width).map(|i| Some((*a.get(i)?, *b.get(i)?))).collect()
        }
        (View::Steps { steps: a, .. }, View::Steps { steps: b, .. }) => {
            let shared = shared_prefix(a, b);
            (0..steps)
                .flat_map(|i| {
                    (0..width).map(move |j| {
                        if i > shared {
                            return None;
                        }
                        let (sa, sb) = (a.get(i)?, b.get(i)?);
                        let (key, va) = sa.top.get(j)?;
                        let vb = sb.entry(key)?;
                        Some((*va, vb))
                    })
                })
                .collect()
        }
        _ => vec![
            None;
            if matches!(answer, View::Logits(_)) {
                width
            } else {
                steps * width
            }
        ],
    }
}
