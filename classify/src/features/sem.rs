//! Sign, exponent and mantissa of each value as three numbers (HSPI's black-box features).

use super::bits::grid_len;
use super::{Context, Extractor, FeatureSpec};

pub struct Sem;

impl Extractor for Sem {
    fn dim(&self, spec: &FeatureSpec) -> usize {
        3 * grid_len(spec)
    }
    fn extract(&self, ctx: &Context, out: &mut Vec<f64>) {
        for v in ctx.answer.value_grid(ctx.spec.steps, ctx.spec.width) {
            let b = v.map_or(0, f32::to_bits);
            out.push(f64::from(b >> 31));
            out.push(f64::from((b >> 23) & 0xff) / 255.0);
            out.push(f64::from(b & 0x7f_ffff) / f64::from(1u32 << 23));
        }
    }
}
