//! llama.cpp's own quantisers where candle's differ, so a requantised matrix holds the very blocks
//! `llama-quantize` writes. Q6_K: ggml's `make_qx_quants` tries 18 scales around the largest
//! weight's and rounds half to even, candle's refines its scale three times and rounds half away
//! from zero (measured on SmolLM2: candle's Q6_K blocks differ from llama-quantize's in all 30
//! matrices, this port's in none). The blocks go to candle as raw bytes, its kernels run them.

use candle_core::quantized::{ggml_file::qtensor_from_ggml, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use half::f16;

use crate::error::Result;

/// Weights per super-block of the K-quants.
pub const QK_K: usize = 256;
/// Bytes of one Q6_K block: 4-bit lows, 2-bit highs, 16 scales, the f16 super-scale.
const Q6K_BLOCK_BYTES: usize = QK_K / 2 + QK_K / 4 + QK_K / 16 + 2;
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

/// Quantise `t` (rows of a multiple of 256 weights) to Q6_K as `llama-quantize` does without an
/// importance matrix.
pub fn quantize_q6k(t: &Tensor) -> Result<QTensor> {
    let dims = t.dims().to_vec();
    let x: Vec<f32> = t.flatten_all()?.to_vec1()?;
    let mut raw = vec![0u8; x.len() / QK_K * Q6K_BLOCK_BYTES];
    for (block, out) in x.chunks(QK_K).zip(raw.chunks_mut(Q6K_BLOCK_BYTES)) {
        q6k_block(block, out);
    }
    Ok(qtensor_from_ggml(GgmlDType::Q6K, &raw, dims, &Device::Cpu)?)
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
    fn a_q6k_block_dequantises_near_its_weights() {
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
        let q = quantize_q6k(&t).unwrap();
        assert_eq!(q.dtype(), GgmlDType::Q6K);
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
        // Six bits over [-1, 1]: a step of about 1/32.
        assert!(worst < 0.02, "{worst}");
    }
}
