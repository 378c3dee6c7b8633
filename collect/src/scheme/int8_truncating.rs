//! INT8 W8A8 as vLLM serves it with its `_C_AVX2` kernel library (CPUs without AVX-512): the
//! same weights, activations and integer product as `super::int8` (which is that library's
//! kernel), in a forward whose vector conversions to bf16 cut the low bits instead of rounding
//! ([`ServedForward::VllmTruncating`]: the rotary embedding's and attention's outputs). The
//! atlas's vLLM answers come from that library; packs hold `int8-w8a8`, and fresh audits compute
//! this path beside it (`super::engine_paths`).

use hspi_datasets::NumericFormat;

use super::int8::Int8W8a8;
use super::{LinearScheme, ServedForward};

struct Int8W8a8Trunc;

pub fn scheme(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    (format == NumericFormat::Int8W8a8Trunc)
        .then(|| Box::new(Int8W8a8Trunc) as Box<dyn LinearScheme>)
}

impl LinearScheme for Int8W8a8Trunc {
    fn format(&self) -> NumericFormat {
        NumericFormat::Int8W8a8Trunc
    }

    fn weights(&self, w: &mut [f32], cols: usize) {
        Int8W8a8.weights(w, cols);
    }

    fn activations(&self, x: &mut [f32], cols: usize) {
        Int8W8a8.activations(x, cols);
    }

    fn multiplies_integers(&self) -> bool {
        true
    }

    fn forward(&self) -> ServedForward {
        ServedForward::VllmTruncating
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same weights and activations as vLLM's path at its other library's rounding; only the
    /// forward around them differs.
    #[test]
    fn the_linear_layer_is_vllms_the_forward_truncates() {
        let row: Vec<f32> = (0..64)
            .map(|i| crate::rounding::round_bf16(((i * 37 % 61) as f32 - 30.0) / 17.0))
            .collect();
        let vllm = super::super::for_format(NumericFormat::Int8W8a8).unwrap();
        let (mut a, mut b) = (row.clone(), row.clone());
        vllm.weights(&mut a, 64);
        Int8W8a8Trunc.weights(&mut b, 64);
        assert_eq!(a, b);
        let (mut a, mut b) = (row.clone(), row);
        vllm.activations(&mut a, 64);
        Int8W8a8Trunc.activations(&mut b, 64);
        assert_eq!(a, b);
        assert!(Int8W8a8Trunc.multiplies_integers());
        assert_eq!(vllm.forward(), ServedForward::Vllm);
        assert_eq!(Int8W8a8Trunc.forward(), ServedForward::VllmTruncating);
    }
}
