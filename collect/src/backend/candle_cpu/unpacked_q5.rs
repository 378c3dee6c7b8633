//! Q5_0 and Q5_1 matrices multiplied as candle multiplies them, only faster. candle has no SIMD
//! kernel for these two types: its `vec_dot_unopt` unpacks every 5-bit level again for every
//! product, and took 70 % of a Q4_K_M reference's time on SmolLM2 (whose 576-wide rows fit no
//! 256-block, so llama-quantize falls back to Q5_0 for Q4_K and Q5_1 for Q5_K in most matrices).
//! Here the levels are unpacked once, when the matrix is loaded; each product then takes the same
//! integer sums (exact, in any order) and the same float steps in candle's order: the same bits
//! (`unpacked_q5_gives_candles_bits`).

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Tensor;
use half::f16;

use super::unpacked_activations::{by_columns, whole_blocks, Activations, BLOCK};

use crate::error::Result;

/// A Q5_0 or Q5_1 matrix (`[rows, cols]`) with its levels unpacked.
pub struct UnpackedQ5 {
    rows: usize,
    cols: usize,
    /// Q5_1 (levels 0..31 with a minimum per block) rather than Q5_0 (levels -16..15).
    with_min: bool,
    /// Every weight's level, row by row.
    levels: Vec<i8>,
    /// Each block's scale, then (Q5_1) its minimum, as f32.
    scales: Vec<f32>,
    mins: Vec<f32>,
}

impl UnpackedQ5 {
    /// `t`'s blocks unpacked; `None` for a type other than Q5_0 and Q5_1.
    pub fn new(t: &QTensor) -> Result<Option<UnpackedQ5>> {
        let with_min = match t.dtype() {
            GgmlDType::Q5_0 => false,
            GgmlDType::Q5_1 => true,
            _ => return Ok(None),
        };
        let block_bytes = if with_min { 24 } else { 22 };
        let (rows, cols, data) = whole_blocks(t, block_bytes)?;
        let blocks = rows * cols / BLOCK;
        let half_at = |b: &[u8], at: usize| f16::from_le_bytes([b[at], b[at + 1]]).to_f32();
        let mut levels = Vec::with_capacity(rows * cols);
        let mut scales = Vec::with_capacity(blocks);
        let mut mins = Vec::with_capacity(if with_min { blocks } else { 0 });
        for b in data.chunks_exact(block_bytes) {
            scales.push(half_at(b, 0));
            let at = if with_min {
                mins.push(half_at(b, 2));
                4
            } else {
                2
            };
            let qh = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
            let qs = &b[at + 4..at + 4 + BLOCK / 2];
            let offset = if with_min { 0 } else { 16 };
            let (mut low, mut high) = ([0i8; BLOCK / 2], [0i8; BLOCK / 2]);
            for j in 0..BLOCK / 2 {
                let h0 = ((qh >> j) & 1) << 4;
                let h1 = ((qh >> (j + 16)) & 1) << 4;
                low[j] = ((qs[j] & 0x0F) as i32 | h0 as i32) as i8 - offset;
                high[j] = ((qs[j] >> 4) as i32 | h1 as i32) as i8 - offset;
            }
            levels.extend_from_slice(&low);
            levels.extend_from_slice(&high);
        }
        Ok(Some(UnpackedQ5 {
            rows,
            cols,
            with_min,
            levels,
            scales,
            mins,
        }))
    }

    /// `x · Wᵀ` for `x` of any rank whose last dimension is the matrix's width.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        by_columns(x, self.rows, self.cols, |range, a| self.columns(range, a))
    }

    /// Columns `range` of the product, column-major (each column's positions together), on the
    /// widest integer instructions this CPU has: the integer sums are exact in any order, so
    /// the bits are the same on every path.
    fn columns(&self, range: std::ops::Range<usize>, a: &Activations) -> Vec<f32> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present, checked just above.
            return unsafe { self.columns_avx2(range, a) };
        }
        self.columns_portable(range, a)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn columns_avx2(&self, range: std::ops::Range<usize>, a: &Activations) -> Vec<f32> {
        self.columns_portable(range, a)
    }

    #[inline(always)]
    fn columns_portable(&self, range: std::ops::Range<usize>, a: &Activations) -> Vec<f32> {
        let blocks = self.cols / BLOCK;
        let mut out = Vec::with_capacity(range.len() * a.positions);
        for col in range {
            let levels = &self.levels[col * self.cols..(col + 1) * self.cols];
            let scales = &self.scales[col * blocks..(col + 1) * blocks];
            for p in 0..a.positions {
                let x = &a.levels[p * self.cols..(p + 1) * self.cols];
                let (x_scales, x_sums) = (
                    &a.scales[p * blocks..(p + 1) * blocks],
                    &a.sums[p * blocks..(p + 1) * blocks],
                );
                let mut sumf = 0f32;
                for b in 0..blocks {
                    let sumi = block_sum(
                        &levels[b * BLOCK..(b + 1) * BLOCK],
                        &x[b * BLOCK..(b + 1) * BLOCK],
                    );
                    let product = sumi as f32 * scales[b] * x_scales[b];
                    sumf += match self.with_min {
                        true => product + self.mins[col * blocks + b] * x_sums[b],
                        false => product,
                    };
                }
                out.push(sumf);
            }
        }
        out
    }
}

/// One block's integer products summed (exact).
#[inline(always)]
fn block_sum(w: &[i8], x: &[i8]) -> i32 {
    let (w, x): (&[i8; BLOCK], &[i8; BLOCK]) = (
        w.try_into().expect("a whole block"),
        x.try_into().expect("a whole block"),
    );
    let mut sum = 0i32;
    for i in 0..BLOCK {
        sum += w[i] as i32 * x[i] as i32;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::super::bits;
    use super::super::unpacked_activations::fixtures;
    use super::*;
    use candle_core::quantized::QMatMul;
    use candle_core::Device;
    use candle_core::Module;

    /// Both types, one position and several, odd and even row counts: every output's bits are
    /// candle's own.
    #[test]
    fn unpacked_q5_gives_candles_bits() {
        let (source, cols) = (fixtures::matrix(), fixtures::SHAPE.1);
        for dtype in [GgmlDType::Q5_0, GgmlDType::Q5_1] {
            let q = QTensor::quantize(&source, dtype).unwrap();
            let unpacked = UnpackedQ5::new(&q).unwrap().expect("a Q5 type");
            let candle = QMatMul::from_qtensor(q).unwrap();
            for positions in [1, 9] {
                let x = fixtures::activations(positions);
                let x = Tensor::from_vec(x, (1, positions, cols), &Device::Cpu).unwrap();
                let want = candle.forward(&x).unwrap();
                let got = unpacked.forward(&x).unwrap();
                assert_eq!(got.dims(), want.dims());
                assert!(
                    bits(&got) == bits(&want),
                    "{dtype:?}, {positions} positions"
                );
            }
        }
    }

    #[test]
    fn other_types_are_left_to_candle() {
        let source = Tensor::ones((4, 64), candle_core::DType::F32, &Device::Cpu).unwrap();
        let q = QTensor::quantize(&source, GgmlDType::Q8_0).unwrap();
        assert!(UnpackedQ5::new(&q).unwrap().is_none());
    }
}
