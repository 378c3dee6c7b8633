//! FP8 weights as transformers runs an FP8 checkpoint on CPU: the weights dequantised to bf16
//! (`bf16(q·s)`, the values FP8 W8A16's scheme gives), the activations left in bf16, a float GEMM
//! in transformers' eager forward ([`ServedForward::Transformers`]). PyTorch's answers from
//! llm-compressor's FP8_DYNAMIC checkpoint show no rounding of the activations: over their 40
//! atlas answers they lie a mean |Δ logprob| of 0.128 from FP8 W8A16, 0.165 from FP8 W8A8, and
//! 0.162 from compressed-tensors' own activation quantise-dequantise in transformers' forward
//! (tried on 2026-11-29).

use hspi_datasets::NumericFormat;

use super::fp8::Fp8;
use super::{LinearScheme, ServedForward};

struct Fp8W8a16Eager;

pub fn scheme(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    (format == NumericFormat::Fp8W8a16Eager)
        .then(|| Box::new(Fp8W8a16Eager) as Box<dyn LinearScheme>)
}

impl LinearScheme for Fp8W8a16Eager {
    fn format(&self) -> NumericFormat {
        NumericFormat::Fp8W8a16Eager
    }

    fn weights(&self, w: &mut [f32], cols: usize) {
        Fp8 { activations: false }.weights(w, cols);
    }

    fn forward(&self) -> ServedForward {
        ServedForward::Transformers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FP8 W8A16's weights, the activations untouched, transformers' forward.
    #[test]
    fn fp8_w8a16s_weights_in_transformers_forward() {
        let row: Vec<f32> = (0..64)
            .map(|i| crate::rounding::round_bf16(((i * 37 % 61) as f32 - 30.0) / 17.0))
            .collect();
        let eager = scheme(NumericFormat::Fp8W8a16Eager).unwrap();
        let w8a16 = super::super::for_format(NumericFormat::Fp8W8a16).unwrap();
        let (mut a, mut b) = (row.clone(), row.clone());
        eager.weights(&mut a, 64);
        w8a16.weights(&mut b, 64);
        assert_eq!(a, b);
        assert_ne!(a, row);
        let mut x = row.clone();
        eager.activations(&mut x, 64);
        assert_eq!(x, row);
        assert_eq!(eager.forward(), ServedForward::Transformers);
    }
}
