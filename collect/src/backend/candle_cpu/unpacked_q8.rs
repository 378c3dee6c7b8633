//! Q8_0 and Q4_0 matrices multiplied as candle's AVX2 kernels multiply them
//! (`vec_dot_q8_0_q8_0`, `vec_dot_q4_0_q8_0`: llama.cpp's, against Q8_0 activations), faster:
//! candle 0.11 converts both blocks' f16 scales for every product and reads each weight once per
//! position. Here the weights' scales are widened once, when the matrix is loaded (Q8_0's levels
//! kept as bytes, Q4_0's nibbles as stored, expanded in the product), and each product takes
//! candle's AVX2 steps in candle's order: the same bits (`unpacked_q8_gives_candles_avx2_bits`).
//! Without AVX2 and FMA, candle's own kernels run. candle is held to these AVX2 kernels on VNNI
//! CPUs too (`kernel_tier`, pinned by `KeptMatrix::new` before any matrix is made).

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Tensor;
use half::f16;

use super::unpacked_activations::{by_columns, whole_blocks, Activations, BLOCK};
use crate::error::Result;

/// A Q8_0 or Q4_0 matrix (`[rows, cols]`): its levels as bytes (Q8_0's) or its nibbles as stored
/// (Q4_0's, 16 bytes a block, expanded in the product as candle expands them: its own size), and
/// its scales as f32.
pub struct UnpackedQ8 {
    rows: usize,
    cols: usize,
    nibbles: bool,
    levels: Vec<u8>,
    scales: Vec<f32>,
}

/// Whether this CPU takes candle's AVX2 path for these types (its `has_avx2_fma`).
fn avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl UnpackedQ8 {
    /// `t`'s blocks unpacked; `None` for another type, or where this CPU lacks AVX2 and FMA.
    pub fn new(t: &QTensor) -> Result<Option<UnpackedQ8>> {
        let block_bytes = match t.dtype() {
            GgmlDType::Q8_0 => 34,
            GgmlDType::Q4_0 => 18,
            _ => return Ok(None),
        };
        if !avx2_fma() {
            return Ok(None);
        }
        let (rows, cols, data) = whole_blocks(t, block_bytes)?;
        let blocks = rows * cols / BLOCK;
        let mut levels = Vec::with_capacity(blocks * (block_bytes - 2));
        let mut scales = Vec::with_capacity(blocks);
        for b in data.chunks_exact(block_bytes) {
            scales.push(f16::from_le_bytes([b[0], b[1]]).to_f32());
            levels.extend_from_slice(&b[2..]);
        }
        Ok(Some(UnpackedQ8 {
            rows,
            cols,
            nibbles: t.dtype() == GgmlDType::Q4_0,
            levels,
            scales,
        }))
    }

    /// `x · Wᵀ` for `x` of any rank whose last dimension is the matrix's width.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        by_columns(x, self.rows, self.cols, |range, a| {
            #[cfg(target_arch = "x86_64")]
            {
                // SAFETY: made only where AVX2 and FMA are present (`new`).
                unsafe { self.columns_avx2(range, a) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                let _ = (range, a);
                unreachable!("made only on x86_64 CPUs with AVX2")
            }
        })
    }

    /// Columns `range` of the product, four positions at a time sharing each weight block's
    /// load; each product's steps are candle's `vec_dot_q8_0_q8_0` (`vec_dot_q4_0_q8_0`: the
    /// nibbles expanded to `level - 8` first): per block the scale `d_w · d_x`, the levels'
    /// products summed in pairs of pairs to eight i32 lanes as f32, fused into eight f32
    /// accumulators, summed horizontally at the end.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn columns_avx2(&self, range: std::ops::Range<usize>, a: &Activations) -> Vec<f32> {
        use std::arch::x86_64::*;
        let blocks = self.cols / BLOCK;
        let mut out = Vec::with_capacity(range.len() * a.positions);
        let load = |levels: &[i8], b: usize| {
            // SAFETY: a whole block of 32 levels lies at `b * BLOCK`.
            unsafe { _mm256_loadu_si256(levels[b * BLOCK..].as_ptr() as *const __m256i) }
        };
        let block_bytes = if self.nibbles { BLOCK / 2 } else { BLOCK };
        let weights = |w: &[u8], b: usize| {
            let at = w[b * block_bytes..].as_ptr();
            if !self.nibbles {
                // SAFETY: a whole block of 32 bytes lies at `b * BLOCK`.
                return unsafe { _mm256_loadu_si256(at as *const __m256i) };
            }
            // candle's `bytes_from_nibbles_32`, then `- 8`. SAFETY: 16 bytes lie at `at`.
            let low = unsafe { _mm_loadu_si128(at as *const __m128i) };
            let both =
                _mm256_insertf128_si256::<1>(_mm256_castsi128_si256(low), _mm_srli_epi16(low, 4));
            let bytes = _mm256_and_si256(_mm256_set1_epi8(0xF), both);
            _mm256_sub_epi8(bytes, _mm256_set1_epi8(8))
        };
        let row_bytes = blocks * block_bytes;
        for col in range {
            let w = &self.levels[col * row_bytes..(col + 1) * row_bytes];
            let w_scales = &self.scales[col * blocks..(col + 1) * blocks];
            let mut p = 0;
            while p < a.positions {
                let n = (a.positions - p).min(4);
                let mut acc = [_mm256_setzero_ps(); 4];
                for (b, w_scale) in w_scales.iter().enumerate() {
                    let bx = weights(w, b);
                    for (i, acc) in acc.iter_mut().enumerate().take(n) {
                        let q = p + i;
                        let x = &a.levels[q * self.cols..(q + 1) * self.cols];
                        let d = _mm256_set1_ps(w_scale * a.scales[q * blocks + b]);
                        let sum = mul_sum_i8_pairs_float(bx, load(x, b));
                        *acc = _mm256_fmadd_ps(d, sum, *acc);
                    }
                }
                out.extend(acc[..n].iter().map(|&acc| hsum_float_8(acc)));
                p += n;
            }
        }
        out
    }
}

/// candle's `mul_sum_i8_pairs_float`: the products of signed bytes, summed in pairs (`maddubs`
/// on |x| and y signed by x) and those in pairs again, as eight f32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn mul_sum_i8_pairs_float(
    x: std::arch::x86_64::__m256i,
    y: std::arch::x86_64::__m256i,
) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let ax = _mm256_sign_epi8(x, x);
    let sy = _mm256_sign_epi8(y, x);
    let dot = _mm256_maddubs_epi16(ax, sy);
    _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_set1_epi16(1), dot))
}

/// candle's `hsum_float_8`: the eight lanes summed as it sums them.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn hsum_float_8(x: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let res = _mm256_extractf128_ps(x, 1);
    let res = _mm_add_ps(res, _mm256_castps256_ps128(x));
    let res = _mm_add_ps(res, _mm_movehl_ps(res, res));
    let res = _mm_add_ss(res, _mm_movehdup_ps(res));
    _mm_cvtss_f32(res)
}

#[cfg(test)]
mod tests {
    use super::super::unpacked_activations::fixtures;
    use super::*;
    use candle_core::quantized::k_quants::{BlockQ4_0, BlockQ8_0, GgmlType};
    use candle_core::Device;

    /// Both types, positions in and beyond one group of four: every output's bits are those of
    /// candle's own AVX2 dot product of the same blocks.
    #[test]
    fn unpacked_q8_gives_candles_avx2_bits() {
        if !avx2_fma() {
            eprintln!("no AVX2 and FMA here: candle's own kernels run, nothing to compare");
            return;
        }
        let ((rows, cols), source) = (fixtures::SHAPE, fixtures::matrix());
        for dtype in [GgmlDType::Q8_0, GgmlDType::Q4_0] {
            let q = QTensor::quantize(&source, dtype).unwrap();
            let unpacked = UnpackedQ8::new(&q).unwrap().expect("a Q8_0 or Q4_0 matrix");
            let data = q.data().unwrap();
            let blocks = cols / BLOCK;
            // candle's own AVX2 dot product of row `r` with one position's activation blocks.
            let candle_dot: CandleDot = match dtype {
                GgmlDType::Q8_0 => {
                    let all: Vec<BlockQ8_0> = blocks_of(&data);
                    Box::new(move |r, ys| {
                        BlockQ8_0::vec_dot(cols, &all[r * blocks..(r + 1) * blocks], ys)
                    })
                }
                _ => {
                    let all: Vec<BlockQ4_0> = blocks_of(&data);
                    Box::new(move |r, ys| {
                        BlockQ4_0::vec_dot(cols, &all[r * blocks..(r + 1) * blocks], ys)
                    })
                }
            };
            for positions in [1, 6] {
                let x = fixtures::activations(positions);
                let got = unpacked
                    .forward(
                        &Tensor::from_vec(x.clone(), (1, positions, cols), &Device::Cpu).unwrap(),
                    )
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap();
                for p in 0..positions {
                    let mut ys = vec![BlockQ8_0::zeros(); blocks];
                    BlockQ8_0::from_float(&x[p * cols..(p + 1) * cols], &mut ys);
                    for r in 0..rows {
                        let want = candle_dot(r, &ys);
                        assert_eq!(
                            got[p * rows + r].to_bits(),
                            want.to_bits(),
                            "{dtype:?}, position {p}, row {r}"
                        );
                    }
                }
            }
        }
    }

    /// candle's dot product of a matrix row with one position's activation blocks.
    type CandleDot = Box<dyn Fn(usize, &[BlockQ8_0]) -> f32>;

    /// A quantised matrix's bytes as its blocks (candle's block types are `repr(C)`, unaligned
    /// bytes copied first).
    fn blocks_of<T: GgmlType>(data: &[u8]) -> Vec<T> {
        let n = data.len() / std::mem::size_of::<T>();
        let mut blocks = vec![T::zeros(); n];
        // SAFETY: `blocks` holds exactly `data.len()` bytes of plain block structs.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                blocks.as_mut_ptr() as *mut u8,
                data.len(),
            );
        }
        blocks
    }
}
