//! INT8 W8A8 as compressed-tensors' own forward computes it in PyTorch (transformers loading a
//! W8A8 checkpoint): quantise-dequantise in the model's dtype and a float GEMM, no integer
//! product. The checkpoint's weights decompressed to bf16, `bf16(q·s)`; the activations per token
//! at run time with `s = bf16(amax/127.5)` (a symmetric int8 range of 255 halved, not vLLM's
//! 127), `q = rne(clamp(bf16(x/s), −128, 127))` and `bf16(q·s)` — each step a bf16 tensor op
//! (`compressed_tensors.quantization.lifecycle.forward`: `calculate_qparams`,
//! `_quantize_dequantize`). The rounding of the codes and the scale both differ from vLLM's
//! (`super::int8`), so each engine's W8A8 leaves its own pattern. Around the linear layers the
//! served path runs transformers' forward ([`ServedForward::Transformers`]): the activations'
//! codes flip with every bf16 step of their inputs, so they are PyTorch's only where the rest of
//! the forward rounds where PyTorch's does.

use hspi_datasets::NumericFormat;

use super::int8::checkpoint_weights;
use super::{amax, per_row, round_bf16, LinearScheme, ServedForward};

struct Int8W8a8Qdq;

pub fn scheme(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    (format == NumericFormat::Int8W8a8Qdq).then(|| Box::new(Int8W8a8Qdq) as Box<dyn LinearScheme>)
}

impl LinearScheme for Int8W8a8Qdq {
    fn format(&self) -> NumericFormat {
        NumericFormat::Int8W8a8Qdq
    }

    fn weights(&self, w: &mut [f32], cols: usize) {
        checkpoint_weights(w, cols);
        w.iter_mut().for_each(|v| *v = round_bf16(*v));
    }

    fn activations(&self, x: &mut [f32], cols: usize) {
        per_row(x, cols, |row| {
            let scale = round_bf16(amax(row) / 127.5);
            if scale == 0.0 {
                return;
            }
            for v in row.iter_mut() {
                let q = round_bf16(*v / scale)
                    .clamp(-128.0, 127.0)
                    .round_ties_even();
                *v = round_bf16(q * scale);
            }
        });
    }

    /// The quantise-dequantise runs inside transformers' own modules.
    fn forward(&self) -> ServedForward {
        ServedForward::Transformers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scale is bf16(amax/127.5) and every step rounds to bf16: amax 191 gives scale 1.5;
    /// 97/1.5 = 64.67 is first rounded to bf16's 64.5, whose code is 64 (96 again), where a
    /// quotient in f32 would code 65; 127·1.5 = 190.5 rounds to bf16's 190.
    #[test]
    fn activations_quantise_in_bf16_with_a_scale_of_amax_over_127_5() {
        let mut row = vec![191.0, 97.0, -3.0, 0.5];
        Int8W8a8Qdq.activations(&mut row, 4);
        assert_eq!(row, vec![190.0, 96.0, -3.0, 0.0]);
        // vLLM's (amax/127, its quotient in f32) codes the same row otherwise.
        let mut vllm = vec![191.0, 97.0, -3.0, 0.5];
        super::super::for_format(NumericFormat::Int8W8a8)
            .unwrap()
            .activations(&mut vllm, 4);
        assert_ne!(row, vllm);
    }

    /// Decompressed weights are the checkpoint's codes times their scale, rounded to bf16.
    #[test]
    fn weights_are_the_checkpoints_codes_decompressed_to_bf16() {
        let row: Vec<f32> = (0..64)
            .map(|i| round_bf16(((i * 37 % 61) as f32 - 30.0) / 17.0))
            .collect();
        let mut exact = row.clone();
        checkpoint_weights(&mut exact, 64);
        let mut qdq = row;
        Int8W8a8Qdq.weights(&mut qdq, 64);
        assert!(qdq.iter().zip(&exact).all(|(a, b)| *a == round_bf16(*b)));
        assert!(
            qdq.iter().zip(&exact).any(|(a, b)| a != b),
            "some product needs more than bf16's 8 bits"
        );
    }
}
