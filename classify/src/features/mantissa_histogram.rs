//! How many low mantissa bits are zero, as a normalised histogram over every value: values
//! computed in bf16 or f16, or printed with few digits, leave trailing zeros that f32 work does not.

use super::{all_values, Context, Extractor, FeatureSpec};

pub struct MantissaHistogram;

const BINS: usize = 24;

impl Extractor for MantissaHistogram {
    fn dim(&self, _spec: &FeatureSpec) -> usize {
        BINS
    }
    fn extract(&self, ctx: &Context, out: &mut Vec<f64>) {
        let values = all_values(ctx.answer);
        let mut hist = [0f64; BINS];
        for v in &values {
            let m = v.to_bits() & 0x7f_ffff;
            let zeros = if m == 0 {
                23
            } else {
                m.trailing_zeros() as usize
            };
            hist[zeros.min(BINS - 1)] += 1.0;
        }
        let n = values.len().max(1) as f64;
        out.extend(hist.iter().map(|h| h / n));
    }
}
