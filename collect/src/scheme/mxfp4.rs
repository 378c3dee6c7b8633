//! MXFP4 (OCP Microscaling v1.0), weight-only as gpt-oss's experts ship it: E2M1 elements, a
//! power-of-two E8M0 scale `2^(⌊log2 amax⌋ − 2)` per 32 along the reduction, elements
//! nearest-even saturating at 6; bf16 activations. (compressed-tensors picks the exponent as
//! `⌈log2(amax/6)⌉`, llama.cpp ties to the lower index: the three disagree on some blocks.)

use hspi_datasets::NumericFormat;

use super::{amax, per_row, round_fp4_e2m1, LinearScheme};

const BLOCK: usize = 32;

struct MxFp4;

pub fn scheme(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    (format == NumericFormat::MxFp4).then(|| Box::new(MxFp4) as Box<dyn LinearScheme>)
}

impl LinearScheme for MxFp4 {
    fn format(&self) -> NumericFormat {
        NumericFormat::MxFp4
    }

    fn weights(&self, w: &mut [f32], cols: usize) {
        per_row(w, cols, |row| {
            for b in row.chunks_mut(BLOCK) {
                let m = amax(b);
                if m == 0.0 {
                    continue;
                }
                let exponent = ((m.to_bits() >> 23) & 0xff) as i32 - 127 - 2;
                let scale = 2f32.powi(exponent);
                for v in b.iter_mut() {
                    *v = round_fp4_e2m1(*v / scale) * scale;
                }
            }
        });
    }
}
