//! llama.cpp's own quantisers where candle's differ, so a requantised matrix holds the very blocks
//! `llama-quantize` writes (no importance matrix). Q6_K: ggml's `make_qx_quants` tries 18 scales
//! around the largest weight's and rounds half to even, candle's refines its scale three times
//! and rounds half away from zero; Q4_K and Q5_K: ggml fits scale and minimum by weighted least
//! squares over 21 and 16 trial scales (`make_qkx2_quants`), candle by its older `make_qkx1`.
//! Measured on SmolLM2: candle's K-quant blocks differ from llama-quantize's in every matrix,
//! this port's in none. The blocks go to candle as raw bytes, its kernels run them.

use candle_core::quantized::{ggml_file::qtensor_from_ggml, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use half::f16;

use crate::error::Result;

/// Weights per super-block of the K-quants.
pub const QK_K: usize = 256;
/// Bytes of one Q6_K block: 4-bit lows, 2-bit highs, 16 scales, the f16 super-scale.
const Q6K_BLOCK_BYTES: usize = QK_K / 2 + QK_K / 4 + QK_K / 16 + 2;
/// Bytes of one Q4_K block: the f16 super-scale and super-minimum, 12 bytes of 6-bit scales and
/// minimums, 4-bit levels.
const Q4K_BLOCK_BYTES: usize = 4 + 12 + QK_K / 2;
/// Bytes of one Q5_K block: as Q4_K's, with the levels' fifth bits.
const Q5K_BLOCK_BYTES: usize = 4 + 12 + QK_K / 8 + QK_K / 2;
/// ggml's threshold below which a group counts as all zero.
const GROUP_MAX_EPS: f32 = 1e-15;

/// ggml's `nearest_int`: round half to even through the float's mantissa (|v| < 2^22).
fn nearest_int(v: f32) -> i32 {
    let bits = (v + 12_582_912.0).to_bits() as i32;
    (bits & 0x007f_ffff) - 0x0040_0000
}

/// ggml's `make_qx_quants` with `rmse_type` 1 (weights x²) and no importance matrix: the scale
/// of a group of `x.len()` weights quantised to `[-nmax, nmax)`, the levels (offset by `nmax`)
/// written to `levels`.
fn make_qx_quants(nmax: i32, x: &[f32], levels: &mut [i8]) -> f32 {
    let (mut max, mut amax) = (0f32, 0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        levels.iter_mut().for_each(|l| *l = 0);
        return 0.0;
    }
    let level = |iscale: f32, v: f32| nearest_int(iscale * v).clamp(-nmax, nmax - 1);
    let sums = |iscale: f32| {
        let (mut sumlx, mut suml2) = (0f32, 0f32);
        for &v in x {
            let l = level(iscale, v) as f32;
            let w = v * v;
            sumlx += w * v * l;
            suml2 += w * l * l;
        }
        (sumlx, suml2)
    };
    let iscale = -(nmax as f32) / max;
    for (l, &v) in levels.iter_mut().zip(x) {
        *l = (level(iscale, v) + nmax) as i8;
    }
    let (sumlx, suml2) = sums(iscale);
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in (-9..=9).filter(|is| *is != 0) {
        let iscale = -(nmax as f32 + 0.1 * is as f32) / max;
        let (sumlx, suml2) = sums(iscale);
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (l, &v) in levels.iter_mut().zip(x) {
                *l = (level(iscale, v) + nmax) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// ggml's `quantize_row_q6_K_ref` for one super-block of 256 weights, as its 210 bytes.
fn q6k_block(x: &[f32], out: &mut [u8]) {
    let mut levels = [0i8; QK_K];
    let mut scales = [0f32; QK_K / 16];
    let (mut max_scale, mut max_abs_scale) = (0f32, 0f32);
    for (ib, scale) in scales.iter_mut().enumerate() {
        let group = 16 * ib..16 * (ib + 1);
        *scale = make_qx_quants(32, &x[group.clone()], &mut levels[group]);
        if scale.abs() > max_abs_scale {
            max_abs_scale = scale.abs();
            max_scale = *scale;
        }
    }
    out.fill(0);
    if max_abs_scale < GROUP_MAX_EPS {
        return;
    }
    let iscale = -128.0 / max_scale;
    let d = f16::from_f32(1.0 / iscale);
    let mut block_scales = [0i8; QK_K / 16];
    for (s, scale) in block_scales.iter_mut().zip(&scales) {
        *s = nearest_int(iscale * scale).min(127) as i8;
    }
    for (j, s) in block_scales.iter().enumerate() {
        let d = d.to_f32() * f32::from(*s);
        if d == 0.0 {
            continue;
        }
        for i in 16 * j..16 * (j + 1) {
            levels[i] = (nearest_int(x[i] / d).clamp(-32, 31) + 32) as i8;
        }
    }
    let (ql, rest) = out.split_at_mut(QK_K / 2);
    let (qh, rest) = rest.split_at_mut(QK_K / 4);
    let (scale_bytes, d_bytes) = rest.split_at_mut(QK_K / 16);
    let l = |i: usize| levels[i] as u8;
    for half in 0..2 {
        let (j, ql, qh) = (128 * half, &mut ql[64 * half..], &mut qh[32 * half..]);
        for i in 0..32 {
            ql[i] = (l(j + i) & 0xf) | ((l(j + i + 64) & 0xf) << 4);
            ql[i + 32] = (l(j + i + 32) & 0xf) | ((l(j + i + 96) & 0xf) << 4);
            qh[i] = (l(j + i) >> 4)
                | ((l(j + i + 32) >> 4) << 2)
                | ((l(j + i + 64) >> 4) << 4)
                | ((l(j + i + 96) >> 4) << 6);
        }
    }
    for (b, s) in scale_bytes.iter_mut().zip(block_scales) {
        *b = s as u8;
    }
    d_bytes.copy_from_slice(&d.to_le_bytes());
}

/// ggml's `make_qkx2_quants` (least squares, no absolute deviation): the scale and the minimum
/// (returned negated, as ggml stores it) of a group of weights `x` with importance `weights`
/// quantised to `0..=nmax`, its levels written to `levels`; `nstep` trial scales from
/// `nmax + rmin` by `rdelta`.
fn make_qkx2_quants(
    nmax: i32,
    x: &[f32],
    weights: &[f32],
    levels: &mut [u8],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
) -> (f32, f32) {
    let (mut min, mut max) = (x[0], x[0]);
    let (mut sum_w, mut sum_x) = (weights[0], weights[0] * x[0]);
    for i in 1..x.len() {
        min = min.min(x[i]);
        max = max.max(x[i]);
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        levels.iter_mut().for_each(|l| *l = 0);
        return (0.0, -min);
    }
    // The trials measure from the best minimum so far, as ggml's loop does.
    let level = |iscale: f32, v: f32, min: f32| nearest_int(iscale * (v - min)).clamp(0, nmax);
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0f32;
    for i in 0..x.len() {
        let l = level(iscale, x[i], min);
        levels[i] = l as u8;
        let diff = scale * l as f32 + min - x[i];
        best_error += weights[i] * diff * diff;
    }
    let mut aux = vec![0u8; x.len()];
    for is in 0..=nstep {
        iscale = (rmin + rdelta * is as f32 + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0f32, 0f32, 0f32);
        for i in 0..x.len() {
            let l = level(iscale, x[i], min);
            aux[i] = l as u8;
            let (w, l) = (weights[i], l as f32);
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0f32;
            for i in 0..x.len() {
                let diff = this_scale * f32::from(aux[i]) + this_min - x[i];
                cur_error += weights[i] * diff * diff;
            }
            if cur_error < best_error {
                levels.copy_from_slice(&aux);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// The 12 bytes of 6-bit scales and minimums of a Q4_K/Q5_K block (`get_scale_min_k4`'s layout).
fn pack_scales(scales: &[u8; 8], mins: &[u8; 8]) -> [u8; 12] {
    let mut q = [0u8; 12];
    for j in 0..8 {
        let (ls, lm) = (scales[j], mins[j]);
        if j < 4 {
            q[j] = ls;
            q[j + 4] = lm;
        } else {
            q[j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
            q[j - 4] |= (ls >> 4) << 6;
            q[j] |= (lm >> 4) << 6;
        }
    }
    q
}

/// ggml's `get_scale_min_k4`.
fn scale_min(j: usize, q: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// The shared part of ggml's `quantize_row_q4_K_ref` and `quantize_row_q5_K_ref` for one
/// super-block: levels in `0..=nmax` per weight, the packed scales and minimums, and the f16
/// super-scale and super-minimum.
fn kquant_levels(x: &[f32], nmax: i32, rmin: f32, nstep: i32) -> ([u8; QK_K], [u8; 12], f16, f16) {
    let mut levels = [0u8; QK_K];
    let (mut scales, mut mins) = ([0f32; 8], [0f32; 8]);
    let (mut max_scale, mut max_min) = (0f32, 0f32);
    for j in 0..8 {
        let group = &x[32 * j..32 * (j + 1)];
        let sum_x2: f32 = group.iter().map(|v| v * v).sum();
        let av_x = (sum_x2 / 32.0).sqrt();
        let weights: Vec<f32> = group.iter().map(|v| av_x + v.abs()).collect();
        let (scale, min) = make_qkx2_quants(
            nmax,
            group,
            &weights,
            &mut levels[32 * j..32 * (j + 1)],
            rmin,
            0.1,
            nstep,
        );
        scales[j] = scale;
        mins[j] = min;
        max_scale = max_scale.max(scale);
        max_min = max_min.max(min);
    }
    let inv_scale = if max_scale > 0.0 {
        63.0 / max_scale
    } else {
        0.0
    };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let (mut ls, mut lm) = ([0u8; 8], [0u8; 8]);
    for j in 0..8 {
        ls[j] = (nearest_int(inv_scale * scales[j]) as u8).min(63);
        lm[j] = (nearest_int(inv_min * mins[j]) as u8).min(63);
    }
    let packed = pack_scales(&ls, &lm);
    let (d, dmin) = (
        f16::from_f32(max_scale / 63.0),
        f16::from_f32(max_min / 63.0),
    );
    for j in 0..8 {
        let (sc, m) = scale_min(j, &packed);
        let d = d.to_f32() * f32::from(sc);
        if d == 0.0 {
            continue;
        }
        let dm = dmin.to_f32() * f32::from(m);
        for i in 32 * j..32 * (j + 1) {
            levels[i] = nearest_int((x[i] + dm) / d).clamp(0, nmax) as u8;
        }
    }
    (levels, packed, d, dmin)
}

/// ggml's `quantize_row_q4_K_ref` for one super-block, as its 144 bytes.
fn q4k_block(x: &[f32], out: &mut [u8]) {
    let (levels, scales, d, dmin) = kquant_levels(x, 15, -1.0, 20);
    out[..2].copy_from_slice(&d.to_le_bytes());
    out[2..4].copy_from_slice(&dmin.to_le_bytes());
    out[4..16].copy_from_slice(&scales);
    let qs = &mut out[16..];
    for (n, chunk) in qs.chunks_mut(32).enumerate() {
        for (i, q) in chunk.iter_mut().enumerate() {
            *q = levels[64 * n + i] | (levels[64 * n + i + 32] << 4);
        }
    }
}

/// ggml's `quantize_row_q5_K_ref` for one super-block, as its 176 bytes.
fn q5k_block(x: &[f32], out: &mut [u8]) {
    let (levels, scales, d, dmin) = kquant_levels(x, 31, -0.5, 15);
    out[..2].copy_from_slice(&d.to_le_bytes());
    out[2..4].copy_from_slice(&dmin.to_le_bytes());
    out[4..16].copy_from_slice(&scales);
    let (qh, ql) = out[16..].split_at_mut(QK_K / 8);
    qh.fill(0);
    let (mut m1, mut m2) = (1u8, 2u8);
    for n in 0..QK_K / 64 {
        for j in 0..32 {
            let (mut l1, mut l2) = (levels[64 * n + j], levels[64 * n + j + 32]);
            if l1 > 15 {
                l1 -= 16;
                qh[j] |= m1;
            }
            if l2 > 15 {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[32 * n + j] = l1 | (l2 << 4);
        }
        m1 <<= 2;
        m2 <<= 2;
    }
}

/// One super-block's quantiser: 256 weights in, the block's bytes out.
type QuantiseBlock = fn(&[f32], &mut [u8]);

/// Quantise `t` (rows of a multiple of 256 weights) to `dtype` (Q4_K, Q5_K or Q6_K) as
/// `llama-quantize` does without an importance matrix; None for another type.
pub fn quantize_kquant(t: &Tensor, dtype: GgmlDType) -> Result<Option<QTensor>> {
    let (bytes, block): (usize, QuantiseBlock) = match dtype {
        GgmlDType::Q4K => (Q4K_BLOCK_BYTES, q4k_block),
        GgmlDType::Q5K => (Q5K_BLOCK_BYTES, q5k_block),
        GgmlDType::Q6K => (Q6K_BLOCK_BYTES, q6k_block),
        _ => return Ok(None),
    };
    let dims = t.dims().to_vec();
    let x: Vec<f32> = t.flatten_all()?.to_vec1()?;
    let mut raw = vec![0u8; x.len() / QK_K * bytes];
    for (weights, out) in x.chunks(QK_K).zip(raw.chunks_mut(bytes)) {
        block(weights, out);
    }
    Ok(Some(qtensor_from_ggml(dtype, &raw, dims, &Device::Cpu)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_round_to_even_as_ggml_does() {
        assert_eq!(nearest_int(2.5), 2);
        assert_eq!(nearest_int(3.5), 4);
        assert_eq!(nearest_int(-2.5), -2);
        assert_eq!(nearest_int(-7.49), -7);
    }

    #[test]
    fn k_quant_blocks_dequantise_near_their_weights() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let x: Vec<f32> = (0..2 * QK_K)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        let t = Tensor::from_vec(x.clone(), (2, QK_K), &Device::Cpu).unwrap();
        // Six, five and four bits over [-1, 1]: steps of about 1/32, 1/16 and 1/8.
        for (dtype, bound) in [
            (GgmlDType::Q6K, 0.02),
            (GgmlDType::Q5K, 0.04),
            (GgmlDType::Q4K, 0.08),
        ] {
            let q = quantize_kquant(&t, dtype).unwrap().unwrap();
            assert_eq!(q.dtype(), dtype);
            let back: Vec<f32> = q
                .dequantize(&Device::Cpu)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            let worst = x
                .iter()
                .zip(&back)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(worst < bound, "{dtype:?}: {worst}");
        }
        assert!(quantize_kquant(&t, GgmlDType::Q8_0).unwrap().is_none());
    }
}
