//! The operations where transformers' eager PyTorch forward on CPU rounds otherwise than vLLM's
//! fused CPU kernels (`served_lm.rs` follows vLLM's by default): the rotary embedding as three bf16
//! tensor operations (`q·cos + rotate_half(q)·sin`), and `scaled_dot_product_attention` on bf16
//! tensors as PyTorch's CPU flash-attention kernel computes it (ATen's `FlashAttentionKernel.cpp`:
//! scores accumulated in f32 and scaled, per block of 512 keys the running maximum subtracted and
//! the exponentials taken by `Vectorized<float>::fexp_u20` — a degree-3 approximation of 2^x,
//! about 1e-4 relative, not `exp` — the exponentials summed in f32 but handed to the product with
//! the values rounded to bf16, the sum of products accumulated in f32 and multiplied by the
//! reciprocal of the sum, rounded to bf16 once). Measured against torch 2.15's SDPA on bf16
//! tensors (AVX2 and AVX-512 kernels alike): every output bit equal on one-hot values, 0.16 % of
//! outputs one bf16 step apart on random ones (the order of f32 sums), where vLLM's f32 softmax
//! leaves 16.6 %.

use crate::rounding::round_bf16;

/// ATen's `kvSplitSize`: keys are taken 512 at a time, each block's exponentials relative to the
/// running maximum so far.
const KEY_BLOCK: usize = 512;

/// `Vectorized<float>::fexp_u20` (ATen's vec256/vec512 float): Malossi et al.'s fast exponential,
/// `2^x` through the float's own exponent field and a cubic for the fraction.
pub fn fexp_u20(x: f32) -> f32 {
    const C0: f32 = 0.000_107_034_35;
    const C1: f32 = 0.303_542_6;
    const C2: f32 = -0.224_338_37;
    const C3: f32 = -0.079_204_24;
    let log2e = f32::from_bits(0x3fb8_aa3b);
    let ln_min = f32::from_bits(0xc2ae_ac50);
    let ln_max = f32::from_bits(0x42b1_7218);
    if x < ln_min {
        return 0.0;
    }
    if x > ln_max {
        return f32::INFINITY;
    }
    let src = x * log2e;
    let fraction = src - src.floor();
    let poly = fraction.mul_add(fraction.mul_add(fraction.mul_add(C3, C2), C1), C0);
    let shifted = 8_388_608f32.mul_add(src - poly, 1_065_353_216.0);
    // `_mm512_cvttps_epi32`: truncation, its integer read as the float's bits.
    f32::from_bits(shifted as i32 as u32)
}

/// One query row of PyTorch's CPU flash attention: `query` (bf16 values, `d` wide) over the
/// keys and values at `visible` (key `j`'s head row at `j * stride + at`), scores times `scale`,
/// into `out` (the f32 sum accumulated there, then rounded); `scores` is the caller's buffer, kept
/// between rows.
#[allow(clippy::too_many_arguments)]
pub fn flash_attention_row(
    query: &[f32],
    keys: &[f32],
    values: &[f32],
    stride: usize,
    at: usize,
    visible: std::ops::RangeInclusive<usize>,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let d = query.len();
    let (first, last) = (*visible.start(), *visible.end());
    let mut max = f32::NEG_INFINITY;
    let mut sum = 0f32;
    let acc = out;
    acc.fill(0.0);
    for block in (0..=last).step_by(KEY_BLOCK) {
        let keys_here = block.max(first)..=(block + KEY_BLOCK - 1).min(last);
        if keys_here.is_empty() {
            continue;
        }
        scores.clear();
        scores.extend(keys_here.clone().map(|j| {
            let k = &keys[j * stride + at..][..d];
            query.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale
        }));
        let block_max = scores.iter().fold(max, |m, s| m.max(*s));
        let mut block_sum = 0f32;
        for s in scores.iter_mut() {
            *s = fexp_u20(*s - block_max);
            block_sum += *s;
        }
        let rescale = (max - block_max).exp();
        sum = block_sum + rescale * sum;
        if max != f32::NEG_INFINITY {
            acc.iter_mut().for_each(|a| *a *= rescale);
        }
        max = block_max;
        for (j, e) in keys_here.zip(scores.iter()) {
            let p = round_bf16(*e);
            let v = &values[j * stride + at..][..d];
            acc.iter_mut().zip(v).for_each(|(a, v)| *a += p * v);
        }
    }
    let reciprocal = 1.0 / sum;
    acc.iter_mut()
        .for_each(|a| *a = round_bf16(*a * reciprocal));
}

/// The rotary embedding of the pair `(a, b)` (Hugging Face's `i, i + d/2`) as transformers'
/// `apply_rotary_pos_emb` computes it on bf16 tensors: each product rounded, then the sum.
pub fn rotate_pair(a: f32, b: f32, cos: f32, sin: f32) -> (f32, f32) {
    (
        round_bf16(round_bf16(a * cos) - round_bf16(b * sin)),
        round_bf16(round_bf16(b * cos) + round_bf16(a * sin)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast exponential is PyTorch's, not `exp`: within 1.1e-4 of e^x and apart from `exp`
    /// on most inputs, e^0 included (0.9999466, whose bf16 is 1: the row's largest weight still
    /// reaches the values as 1, but the sum it is divided by is short of it).
    #[test]
    fn fexp_u20_is_pytorchs_approximation() {
        assert_eq!(fexp_u20(0.0), f32::from_bits(0x3f7f_fc80));
        assert_eq!(round_bf16(fexp_u20(0.0)), 1.0);
        assert_eq!(fexp_u20(-100.0), 0.0);
        let mut apart = 0;
        for i in 0..2000 {
            let x = -(i as f32) * 0.01;
            let (fast, exact) = (fexp_u20(x) as f64, (x as f64).exp());
            assert!(
                ((fast - exact) / exact).abs() < 1.2e-4,
                "{x}: {fast} vs {exact}"
            );
            apart += (fast as f32 != x.exp()) as usize;
        }
        assert!(apart > 1500, "{apart}");
    }

    /// The probabilities reach the values in bf16: a key scoring 2^-9 below the maximum (its
    /// exponential 0.99805, between bf16's 0.99609 and 1.0) weighs as one of the two, where an f32
    /// softmax keeps its weight; the output is then a bf16 value.
    #[test]
    fn attention_weights_the_values_by_bf16_exponentials() {
        let d = 2;
        let query = [1.0, 0.0];
        let keys = [1.0, 0.0, 1.0 - 2f32.powi(-9), 0.0];
        let values = [1.0, 0.0, -1.0, 1.0];
        let mut out = [0f32; 2];
        flash_attention_row(
            &query,
            &keys,
            &values,
            d,
            0,
            0..=1,
            1.0,
            &mut Vec::new(),
            &mut out,
        );
        let e = fexp_u20(-(2f32.powi(-9)));
        let p = round_bf16(e);
        assert_ne!(p, e);
        let reciprocal = 1.0 / (1.0 + e);
        assert_eq!(
            out,
            [
                round_bf16((1.0 - p) * reciprocal),
                round_bf16(p * reciprocal)
            ]
        );
    }

    /// Past 512 keys a second block rescales what the first summed by the new maximum: over 600
    /// keys whose largest score lies in the second block the output is still the softmax-weighted
    /// mean within the bf16 steps of its weights and its rounding.
    #[test]
    fn a_second_block_of_keys_rescales_the_first() {
        let n = 600;
        let keys: Vec<f32> = (0..n).map(|j| (j as f32 / n as f32) * 4.0).collect();
        let values: Vec<f32> = (0..n)
            .map(|j| round_bf16(((j * 53 % 97) as f32) / 40.0))
            .collect();
        let mut out = [0f32];
        flash_attention_row(
            &[1.0],
            &keys,
            &values,
            1,
            0,
            0..=n - 1,
            1.0,
            &mut Vec::new(),
            &mut out,
        );
        let max = keys[n - 1] as f64;
        let w: Vec<f64> = keys.iter().map(|k| (*k as f64 - max).exp()).collect();
        let exact = w
            .iter()
            .zip(&values)
            .map(|(w, v)| w * *v as f64)
            .sum::<f64>()
            / w.iter().sum::<f64>();
        assert!(
            (out[0] as f64 - exact).abs() < 0.01 * exact,
            "{} vs {exact}",
            out[0]
        );
    }

    #[test]
    fn the_rotation_rounds_each_product() {
        let (a, b, cos, sin) = (1.0 + 2f32.powi(-7), 1.0, 0.75, 0.5 + 2f32.powi(-8));
        let (x, _) = rotate_pair(a, b, cos, sin);
        assert_eq!(x, round_bf16(round_bf16(a * cos) - round_bf16(b * sin)));
        assert_ne!(x, round_bf16(a * cos - b * sin));
    }
}
