//! Rounding to narrow floating formats and quantise→dequantise to integer formats,
//! round-to-nearest-even as GPU conversion instructions do (and toward zero where an engine's own
//! conversion truncates: vLLM's CPU fp8 KV cache).

use half::{bf16, f16};

pub fn round_bf16(x: f32) -> f32 {
    bf16::from_f32(x).to_f32()
}

/// bf16 by dropping the low 16 bits (toward zero): vLLM's CPU vector conversion where the CPU
/// has no AVX-512 BF16 instruction (`_C_AVX2`'s `BF16Vec8` from `FP32Vec8`).
pub fn truncate_bf16(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0xffff_0000)
}

pub fn round_f16(x: f32) -> f32 {
    f16::from_f32(x).to_f32()
}

/// TensorFloat-32: f32 range, 10 mantissa bits.
pub fn round_tf32(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let b = x.to_bits();
    let lsb = (b >> 13) & 1;
    f32::from_bits(b.wrapping_add(0x0fff + lsb) & !0x1fff)
}

/// Round to a small float with `mantissa` stored bits, smallest normal exponent `emin`, largest
/// finite value `max` (saturating, as fp8 conversions with satfinite do).
fn round_minifloat(x: f32, mantissa: i32, emin: i32, max: f64) -> f32 {
    minifloat(x, mantissa, emin, max, f64::round_ties_even)
}

/// `x` on the grid of a small float (`mantissa` stored bits, smallest normal exponent `emin`),
/// `to_step` choosing the step (nearest-even, or toward zero), saturating at `max`.
fn minifloat(x: f32, mantissa: i32, emin: i32, max: f64, to_step: fn(f64) -> f64) -> f32 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let a = (x as f64).abs();
    let exp = (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(emin);
    let quantum = 2f64.powi(exp - mantissa);
    let r = (to_step(a / quantum) * quantum).min(max);
    (r as f32).copysign(x)
}

pub fn round_fp8_e4m3(x: f32) -> f32 {
    round_minifloat(x, 3, -6, 448.0)
}

pub fn round_fp8_e5m2(x: f32) -> f32 {
    round_minifloat(x, 2, -14, 57344.0)
}

/// FP4 E2M1 ({0, 0.5, 1, 1.5, 2, 3, 4, 6}), nearest-even on that grid, saturating at 6: the
/// element of NVFP4 and MXFP4.
pub fn round_fp4_e2m1(x: f32) -> f32 {
    round_minifloat(x, 1, 0, 6.0)
}

/// A small float with `mantissa` stored bits, smallest normal exponent `emin`, largest finite
/// value `max`, its mantissa cut toward zero (saturating): vLLM's CPU conversion to an fp8 KV
/// cache (`float_to_fp8e4m3_scalar` and `…e5m2…` in its `cpu_attn_fp8.hpp`) keeps the leading
/// bits of the f32 value and drops the rest.
fn truncate_minifloat(x: f32, mantissa: i32, emin: i32, max: f64) -> f32 {
    minifloat(x, mantissa, emin, max, f64::trunc)
}

/// FP8 E4M3 as vLLM's CPU KV cache stores it: truncated, saturating at 448.
pub fn truncate_fp8_e4m3(x: f32) -> f32 {
    truncate_minifloat(x, 3, -6, 448.0)
}

/// FP8 E5M2 as vLLM's CPU KV cache stores it: truncated, saturating at 57344.
pub fn truncate_fp8_e5m2(x: f32) -> f32 {
    truncate_minifloat(x, 2, -14, 57344.0)
}

pub fn amax(xs: &[f32]) -> f32 {
    xs.iter().fold(0f32, |m, v| m.max(v.abs()))
}

/// Per-tensor scaled fp8: x ≈ fp8(x / s) · s with s = amax / fp8_max.
pub fn qdq_fp8(xs: &mut [f32], e4m3: bool) {
    let (max, round): (f32, fn(f32) -> f32) = if e4m3 {
        (448.0, round_fp8_e4m3)
    } else {
        (57344.0, round_fp8_e5m2)
    };
    let scale = amax(xs) / max;
    if scale == 0.0 {
        return;
    }
    for v in xs.iter_mut() {
        *v = round(*v / scale) * scale;
    }
}

/// Symmetric integer quantisation of one slice: returns (integers, scale) with scale = amax/qmax.
pub fn quantize_symmetric(xs: &[f32], qmax: i32, qmin: i32) -> (Vec<i32>, f32) {
    let scale = amax(xs) / qmax as f32;
    if scale == 0.0 {
        return (vec![0; xs.len()], 0.0);
    }
    let q = xs
        .iter()
        .map(|v| ((v / scale).round_ties_even() as i32).clamp(qmin, qmax))
        .collect();
    (q, scale)
}

/// Weight-only int4, one scale per `group` consecutive weights of a row (along the reduction).
pub fn qdq_int4_groups(row: &mut [f32], group: usize) {
    for chunk in row.chunks_mut(group) {
        let (q, scale) = quantize_symmetric(chunk, 7, -8);
        for (v, q) in chunk.iter_mut().zip(q) {
            *v = q as f32 * scale;
        }
    }
}

/// MX-style int8: blocks of 32 share a power-of-two scale 2^(e−6), e = ⌊log2 amax⌋.
pub fn qdq_mxint8(row: &mut [f32]) {
    for chunk in row.chunks_mut(32) {
        let m = amax(chunk);
        if m == 0.0 {
            continue;
        }
        let e = ((m.to_bits() >> 23) & 0xff) as i32 - 127;
        let scale = 2f32.powi(e - 6);
        for v in chunk.iter_mut() {
            *v = (*v / scale).round_ties_even().clamp(-127.0, 127.0) * scale;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Truncation keeps the high 16 bits whatever the rest: 1 + 2^-7·(255/256) stays 1, where
    /// rounding gives the next bf16 step; negative values move toward zero too.
    #[test]
    fn truncating_to_bf16_cuts_toward_zero() {
        let x = 1.0 + 2f32.powi(-7) * (255.0 / 256.0);
        assert_eq!(truncate_bf16(x), 1.0);
        assert_eq!(round_bf16(x), 1.0 + 2f32.powi(-7));
        assert_eq!(truncate_bf16(-x), -1.0);
        assert_eq!(truncate_bf16(0.75), 0.75);
    }

    #[test]
    fn tf32_keeps_ten_mantissa_bits_ties_to_even() {
        assert_eq!(round_tf32(1.0), 1.0);
        let one_ulp_tf32 = 2f32.powi(-10);
        assert_eq!(round_tf32(1.0 + one_ulp_tf32), 1.0 + one_ulp_tf32);
        assert_eq!(
            round_tf32(1.0 + one_ulp_tf32 / 2.0),
            1.0,
            "tie goes to even"
        );
        assert_eq!(
            round_tf32(1.0 + 3.0 * one_ulp_tf32 / 2.0),
            1.0 + 2.0 * one_ulp_tf32
        );
    }

    #[test]
    fn fp8_values_match_the_ocp_tables() {
        assert_eq!(round_fp8_e4m3(1000.0), 448.0, "saturates");
        assert_eq!(round_fp8_e4m3(1.0625), 1.0, "3 mantissa bits: tie to even");
        assert_eq!(round_fp8_e4m3(1.1), 1.125);
        assert_eq!(
            round_fp8_e4m3(2f32.powi(-9)),
            2f32.powi(-9),
            "smallest subnormal"
        );
        assert_eq!(round_fp8_e5m2(1.1), 1.0);
        assert_eq!(round_fp8_e5m2(1.2), 1.25);
        assert_eq!(round_fp8_e5m2(-3.0), -3.0);
    }

    #[test]
    fn int4_groups_use_their_own_scale() {
        let mut row: Vec<f32> = (0..8)
            .map(|i| i as f32)
            .chain((0..8).map(|i| i as f32 * 100.0))
            .collect();
        qdq_int4_groups(&mut row, 8);
        assert_eq!(&row[..8], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        assert_eq!(row[15], 700.0);
    }

    #[test]
    fn mxint8_is_exact_for_small_integers() {
        let mut row: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
        let orig = row.clone();
        qdq_mxint8(&mut row);
        assert_eq!(row, orig);
    }

    #[test]
    fn vllm_cpu_fp8_cache_conversion_truncates_and_saturates() {
        // 1.9375 lies between e4m3's 1.875 and 2.0: nearest-even gives 2, truncation 1.875.
        assert_eq!(round_fp8_e4m3(1.9375), 2.0);
        assert_eq!(truncate_fp8_e4m3(1.9375), 1.875);
        assert_eq!(truncate_fp8_e4m3(-1.9375), -1.875);
        assert_eq!(truncate_fp8_e4m3(1000.0), 448.0);
        // Subnormals in steps of 2^-9, cut toward zero.
        assert_eq!(truncate_fp8_e4m3(3.9 / 512.0), 3.0 / 512.0);
        // E5M2: two mantissa bits (1.75 below 1.96875), 57344 at most.
        assert_eq!(truncate_fp8_e5m2(1.96875), 1.75);
        assert_eq!(truncate_fp8_e5m2(1e6), 57344.0);
    }
}
