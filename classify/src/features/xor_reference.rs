//! The bits that differ from the first reference's value at the same place.

use super::bits::grid_len;
use super::{Context, Extractor, FeatureSpec};

pub struct XorReference;

impl Extractor for XorReference {
    fn dim(&self, spec: &FeatureSpec) -> usize {
        32 * grid_len(spec)
    }
    fn extract(&self, ctx: &Context, out: &mut Vec<f64>) {
        let (steps, width) = (ctx.spec.steps, ctx.spec.width);
        let mine = ctx.answer.value_grid(steps, width);
        let theirs = match ctx.references.first() {
            Some(Some(r)) => r.value_grid(steps, width),
            _ => vec![None; mine.len()],
        };
        for (a, b) in mine.iter().zip(&theirs) {
            let x = match (a, b) {
                (Some(a), Some(b)) => a.to_bits() ^ b.to_bits(),
                _ => 0,
            };
            out.extend((0..32).map(|i| f64::from((x >> i) & 1)));
        }
    }
}
