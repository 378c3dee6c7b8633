//! Q5_0 and Q5_1 matrices multiplied as candle multiplies them, only faster. candle has no SIMD
//! kernel for these two types: its `vec_dot_unopt` unpacks every 5-bit level again for every
//! product, and took 70 % of a Q4_K_M reference's time on SmolLM2 (whose 576-wide rows fit no
//! 256-block, so llama-quantize falls back to Q5_0 for Q4_K and Q5_1 for Q5_K in most matrices).
//! Here the levels are unpacked once, when the matrix is loaded; each product then takes the same
//! integer sums (exact, in any order) and the same float steps in candle's order: the same bits
//! (`unpacked_q5_gives_candles_bits`).

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use half::f16;

use crate::error::{CollectError, Result};

/// Weights per block of both types (and of their activations' Q8_0 / Q8_1 blocks).
const BLOCK: usize = 32;

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

/// One activation block as candle quantises it for these types (Q8_0, and Q8_1's sum).
struct ActivationBlock {
    levels: [i8; BLOCK],
    scale: f32,
    /// Q8_1's `s`: the levels' sum times the scale, in f16.
    sum: f32,
}

impl UnpackedQ5 {
    /// `t`'s blocks unpacked; `None` for a type other than Q5_0 and Q5_1.
    pub fn new(t: &QTensor) -> Result<Option<UnpackedQ5>> {
        let with_min = match t.dtype() {
            GgmlDType::Q5_0 => false,
            GgmlDType::Q5_1 => true,
            _ => return Ok(None),
        };
        let (rows, cols) = t.shape().dims2()?;
        let data = t.data()?;
        let block_bytes = if with_min { 24 } else { 22 };
        let blocks = rows * cols / BLOCK;
        if cols % BLOCK != 0 || data.len() != blocks * block_bytes {
            return Err(CollectError::Candle(format!(
                "a {:?} matrix of {rows}×{cols} holds {} bytes",
                t.dtype(),
                data.len()
            )));
        }
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
        let mut dims = x.dims().to_vec();
        let values = x.flatten_all()?.to_vec1::<f32>()?;
        let positions = values.len() / self.cols;
        let activations: Vec<Vec<ActivationBlock>> = values
            .chunks_exact(self.cols)
            .map(|row| row.chunks_exact(BLOCK).map(quantise).collect())
            .collect();
        let mut out = vec![0f32; positions * self.rows];
        // Output columns split over the cores (each product is one worker's alone).
        let workers = std::thread::available_parallelism().map_or(1, usize::from);
        let per = self.rows.div_ceil(workers).max(1);
        let mut columns: Vec<Vec<f32>> = vec![Vec::new(); self.rows.div_ceil(per)];
        std::thread::scope(|scope| {
            for (w, part) in columns.iter_mut().enumerate() {
                let activations = &activations;
                scope.spawn(move || {
                    let range = w * per..((w + 1) * per).min(self.rows);
                    for row in activations {
                        for col in range.clone() {
                            part.push(self.dot(col, row));
                        }
                    }
                });
            }
        });
        for (w, part) in columns.iter().enumerate() {
            let width = part.len() / positions.max(1);
            for (p, chunk) in part.chunks(width.max(1)).enumerate() {
                let at = p * self.rows + w * per;
                out[at..at + chunk.len()].copy_from_slice(chunk);
            }
        }
        *dims.last_mut().expect("a matrix's input has a dimension") = self.rows;
        Ok(Tensor::from_vec(out, dims, &Device::Cpu)?)
    }

    /// Row `col` of the matrix with one position's activation blocks, in candle's float steps:
    /// `sumf += sumi · d_w · d_x` (Q5_0), `sumf += sumi · d_w · d_x + m_w · s_x` (Q5_1).
    fn dot(&self, col: usize, activation: &[ActivationBlock]) -> f32 {
        let blocks = self.cols / BLOCK;
        let levels = &self.levels[col * self.cols..(col + 1) * self.cols];
        let mut sumf = 0f32;
        for (b, a) in activation.iter().enumerate() {
            let w = &levels[b * BLOCK..(b + 1) * BLOCK];
            let sumi: i32 = w
                .iter()
                .zip(&a.levels)
                .map(|(&w, &x)| w as i32 * x as i32)
                .sum();
            let at = col * blocks + b;
            if self.with_min {
                sumf += sumi as f32 * self.scales[at] * a.scale + self.mins[at] * a.sum;
            } else {
                sumf += sumi as f32 * self.scales[at] * a.scale;
            }
        }
        sumf
    }
}

/// candle's `BlockQ8_0::from_float` / `BlockQ8_1::from_float` of one block (the scale from the
/// largest magnitude, levels rounded half away from zero; Q8_1's sum as f16 times the f16 scale).
fn quantise(xs: &[f32]) -> ActivationBlock {
    let amax = xs.iter().fold(0f32, |m, x| m.max(x.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut levels = [0i8; BLOCK];
    for (l, &x) in levels.iter_mut().zip(xs) {
        *l = (x * id).round() as i8;
    }
    let scale = f16::from_f32(d);
    let sum: i32 = levels.iter().map(|&l| l as i32).sum();
    ActivationBlock {
        levels,
        scale: scale.to_f32(),
        sum: (f16::from_f32(sum as f32) * scale).to_f32(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::bits;
    use super::*;
    use candle_core::quantized::QMatMul;
    use candle_core::Module;

    /// Both types, one position and several, odd and even row counts: every output's bits are
    /// candle's own.
    #[test]
    fn unpacked_q5_gives_candles_bits() {
        let (rows, cols) = (37, 192);
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| (((i * 7919) % 2003) as f32 - 1001.0) / 613.0)
            .collect();
        let source = Tensor::from_vec(values, (rows, cols), &Device::Cpu).unwrap();
        for dtype in [GgmlDType::Q5_0, GgmlDType::Q5_1] {
            let q = QTensor::quantize(&source, dtype).unwrap();
            let unpacked = UnpackedQ5::new(&q).unwrap().expect("a Q5 type");
            let candle = QMatMul::from_qtensor(q).unwrap();
            for positions in [1, 9] {
                let x: Vec<f32> = (0..positions * cols)
                    .map(|i| ((i * 31 % 97) as f32 - 48.0) / 23.0 * (1.0 + (i % 5) as f32))
                    .collect();
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
