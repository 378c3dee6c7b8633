//! NVFP4: E2M1 elements, an E4M3 scale per 16 along the reduction and a global fp32 scale
//! `G = 448·6/amax` per tensor (fused layers share the smallest); `s = e4m3(min(G·bf16(amax_block/6), 448))`, element `fp4(w/(s/G))`,
//! dequantised `bf16(fp4·(s/G))` (compressed-tensors' arithmetic, checked against its checkpoints). NVFP4A16 (llm-compressor's weight-only scheme): bf16 activations.
//! W4A4: activations in blocks of 16 per token too, under a global scale taken from the token's
//! own amax (the engines' is a static calibrated one, which a reference cannot know).

use hspi_datasets::NumericFormat;

use super::{amax, per_row, round_bf16, round_fp4_e2m1, round_fp8_e4m3, LinearScheme};

const BLOCK: usize = 16;
const E4M3_MAX: f32 = 448.0;
const FP4_MAX: f32 = 6.0;

struct NvFp4 {
    activations: bool,
}

pub fn scheme(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    match format {
        NumericFormat::NvFp4A16 => Some(Box::new(NvFp4 { activations: false })),
        NumericFormat::NvFp4W4a4 => Some(Box::new(NvFp4 { activations: true })),
        _ => None,
    }
}

/// Quantise and dequantise `xs` (bf16 values) in blocks of 16 under the global scale `global`,
/// as compressed-tensors computes it: the block's amax/6 in bf16, times G, rounded to E4M3; the
/// effective scale `s/G` in f32; elements `fp4(x/(s/G))`, dequantised in bf16.
fn blocks(xs: &mut [f32], global: f32) {
    for b in xs.chunks_mut(BLOCK) {
        let scale = round_fp8_e4m3((global * round_bf16(amax(b) / FP4_MAX)).min(E4M3_MAX));
        if scale == 0.0 {
            b.iter_mut().for_each(|v| *v = 0.0);
            continue;
        }
        let effective = scale / global;
        for v in b.iter_mut() {
            *v = round_bf16(round_fp4_e2m1(*v / effective) * effective);
        }
    }
}

/// `448·6/amax` as llm-compressor's bf16 arithmetic computes it, `bf16(448·bf16(6/amax))`
/// (1 tensor in 8 of its test fixtures differs from the rounded quotient).
fn global_scale(xs: &[f32]) -> Option<f32> {
    let m = amax(xs);
    (m > 0.0).then(|| round_bf16(E4M3_MAX * round_bf16(FP4_MAX / m)))
}

impl LinearScheme for NvFp4 {
    fn format(&self) -> NumericFormat {
        if self.activations {
            NumericFormat::NvFp4W4a4
        } else {
            NumericFormat::NvFp4A16
        }
    }

    fn weights(&self, w: &mut [f32], cols: usize) {
        self.fused_weights(&mut [w], cols);
    }

    /// Fused layers share the smallest of their global scales (llm-compressor's
    /// `update_fused_layer_weight_global_scales`, as one fused GEMM needs one).
    fn fused_weights(&self, parts: &mut [&mut [f32]], cols: usize) {
        let Some(global) = parts
            .iter()
            .filter_map(|w| global_scale(w))
            .min_by(f32::total_cmp)
        else {
            return;
        };
        for w in parts.iter_mut() {
            per_row(w, cols, |row| blocks(row, global));
        }
    }

    fn activations(&self, x: &mut [f32], cols: usize) {
        if !self.activations {
            return;
        }
        per_row(x, cols, |row| {
            if let Some(global) = global_scale(row) {
                blocks(row, global);
            }
        });
    }
}
