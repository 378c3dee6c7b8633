//! FP8 E4M3, as llm-compressor's FP8_DYNAMIC checkpoints store it and vLLM serves it: weights
//! per output channel with scale `amax/448` computed in the weights' bf16 (the division rounded
//! to bf16 before the saturating cast, as its fake quantisation does). W8A8 (`--quantization
//! fp8` on sm89+): activations per token at run time, `s = max(amax/448, 1/(448·512))`, true
//! division, saturating cast. W8A16 (Marlin, GPUs without FP8): the weights dequantised to bf16
//! in the kernel, activations untouched.

use hspi_datasets::NumericFormat;

use super::{amax, per_row, round_bf16, round_fp8_e4m3, LinearScheme};

const E4M3_MAX: f32 = 448.0;

pub(super) struct Fp8 {
    /// Whether the activations are rounded too (W8A8), or only the weights (W8A16).
    pub(super) activations: bool,
}

pub fn scheme(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    match format {
        NumericFormat::Fp8W8a8 => Some(Box::new(Fp8 { activations: true })),
        NumericFormat::Fp8W8a16 => Some(Box::new(Fp8 { activations: false })),
        _ => None,
    }
}

impl LinearScheme for Fp8 {
    fn format(&self) -> NumericFormat {
        if self.activations {
            NumericFormat::Fp8W8a8
        } else {
            NumericFormat::Fp8W8a16
        }
    }

    fn weights(&self, w: &mut [f32], cols: usize) {
        let weight_only = !self.activations;
        per_row(w, cols, |row| {
            let scale = round_bf16(amax(row) / E4M3_MAX);
            if scale == 0.0 {
                return;
            }
            for v in row.iter_mut() {
                let q = round_fp8_e4m3(round_bf16(*v / scale));
                // Marlin writes the dequantised weight in bf16; the FP8 GEMM keeps q·s exact.
                *v = if weight_only {
                    round_bf16(q * scale)
                } else {
                    q * scale
                };
            }
        });
    }

    fn activations(&self, x: &mut [f32], cols: usize) {
        if !self.activations {
            return;
        }
        per_row(x, cols, |row| {
            let scale = (amax(row) / E4M3_MAX).max(1.0 / (E4M3_MAX * 512.0));
            for v in row.iter_mut() {
                *v = round_fp8_e4m3(*v / scale) * scale;
            }
        });
    }
}
