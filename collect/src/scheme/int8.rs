//! INT8 W8A8, as compressed-tensors checkpoints (llm-compressor's W8A8, SmoothQuant's factors
//! folded into the norms) store it and vLLM serves it: weights int8 per output channel with
//! scale `bf16(amax/127.5)`, `q = clamp(rne(bf16(w/s)), −128, 127)` (checked against a W8A8
//! checkpoint llm-compressor 0.14 made of SmolLM2: every scale and weight equal); activations per
//! token at run time, `s = amax/127`, `q = rne(x·f32(1/s))`, multiplied as integers
//! (`backend::candle_cpu::int8_product`: vLLM's CPU kernel, its saturation and epilogue).

use hspi_datasets::NumericFormat;

use super::{amax, per_row, round_bf16, LinearScheme};

pub(super) struct Int8W8a8;

pub fn scheme(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    (format == NumericFormat::Int8W8a8).then(|| Box::new(Int8W8a8) as Box<dyn LinearScheme>)
}

impl LinearScheme for Int8W8a8 {
    fn format(&self) -> NumericFormat {
        NumericFormat::Int8W8a8
    }

    fn weights(&self, w: &mut [f32], cols: usize) {
        checkpoint_weights(w, cols);
    }

    fn activations(&self, x: &mut [f32], cols: usize) {
        per_row(x, cols, |row| {
            let m = amax(row);
            if m == 0.0 {
                return;
            }
            let scale = m / 127.0;
            let inverse = (1.0f64 / scale as f64) as f32;
            for v in row.iter_mut() {
                *v = (*v * inverse).round_ties_even().clamp(-128.0, 127.0) * scale;
            }
        });
    }

    fn multiplies_integers(&self) -> bool {
        true
    }
}

/// The checkpoint's weights, each code times its row's scale (exact in f32): `q =
/// clamp(rne(bf16(w/s)), −128, 127)` with `s = bf16(amax/127.5)` per output channel.
pub(super) fn checkpoint_weights(w: &mut [f32], cols: usize) {
    per_row(w, cols, |row| {
        let scale = round_bf16(amax(row) / 127.5);
        if scale == 0.0 {
            return;
        }
        for v in row.iter_mut() {
            let q = round_bf16(*v / scale)
                .round_ties_even()
                .clamp(-128.0, 127.0);
            *v = q * scale;
        }
    });
}
