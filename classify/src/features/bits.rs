//! HSPI-LD: the 32 raw bits of each value, missing values as all zeros.

use super::{Context, Extractor, FeatureSpec};

pub struct Bits;

impl Extractor for Bits {
    fn dim(&self, spec: &FeatureSpec) -> usize {
        32 * grid_len(spec)
    }
    fn extract(&self, ctx: &Context, out: &mut Vec<f64>) {
        for v in ctx.answer.value_grid(ctx.spec.steps, ctx.spec.width) {
            let b = v.map_or(0, f32::to_bits);
            out.extend((0..32).map(|i| f64::from((b >> i) & 1)));
        }
    }
}

pub(super) fn grid_len(spec: &FeatureSpec) -> usize {
    if spec.output_kind == "logits" {
        spec.width
    } else {
        spec.steps * spec.width
    }
}
