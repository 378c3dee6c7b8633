//! What the unpacked kernels (`unpacked_q5`, `unpacked_q8`) share: a pass's activations
//! quantised to 8-bit blocks as candle quantises them for these weight types, and the product
//! split over the cores by output column, each worker taking one column's weights through every
//! position (so a weight is read from memory once per pass, not once per position).

use std::borrow::Cow;

use candle_core::quantized::QTensor;
use candle_core::{Device, Tensor};
use half::f16;

use crate::error::{CollectError, Result};

/// Values per block of every type these kernels multiply (Q4_0, Q5_0, Q5_1, Q8_0) and of their
/// activations' Q8_0 / Q8_1 blocks.
pub const BLOCK: usize = 32;

/// A quantised matrix's rows, columns and bytes, checked to be whole blocks of `block_bytes`
/// bytes per [`BLOCK`] values.
pub fn whole_blocks(t: &QTensor, block_bytes: usize) -> Result<(usize, usize, Cow<'_, [u8]>)> {
    let (rows, cols) = t.shape().dims2()?;
    let data = t.data()?;
    if cols % BLOCK != 0 || data.len() != rows * cols / BLOCK * block_bytes {
        return Err(CollectError::Candle(format!(
            "a {:?} matrix of {rows}×{cols} holds {} bytes",
            t.dtype(),
            data.len()
        )));
    }
    Ok((rows, cols, data))
}

/// Every position's activation blocks, position by position: Q8_0's levels and scale (the f16
/// scale as f32), and Q8_1's sum.
pub struct Activations {
    pub positions: usize,
    pub levels: Vec<i8>,
    pub scales: Vec<f32>,
    pub sums: Vec<f32>,
}

impl Activations {
    /// `values`, `cols` per position, quantised.
    pub fn of(values: &[f32], cols: usize) -> Activations {
        let positions = values.len() / cols;
        let blocks = positions * cols / BLOCK;
        let mut a = Activations {
            positions,
            levels: Vec::with_capacity(positions * cols),
            scales: Vec::with_capacity(blocks),
            sums: Vec::with_capacity(blocks),
        };
        for block in values[..positions * cols].chunks_exact(BLOCK) {
            quantise(block, &mut a);
        }
        a
    }
}

/// candle's `BlockQ8_0::from_float` / `BlockQ8_1::from_float` of one block appended to `a` (the
/// scale from the largest magnitude, levels rounded half away from zero; Q8_1's sum as f16 times
/// the f16 scale).
fn quantise(xs: &[f32], a: &mut Activations) {
    let amax = xs.iter().fold(0f32, |m, x| m.max(x.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut sum = 0i32;
    for &x in xs {
        let level = (x * id).round() as i8;
        sum += level as i32;
        a.levels.push(level);
    }
    let scale = f16::from_f32(d);
    a.scales.push(scale.to_f32());
    a.sums.push((f16::from_f32(sum as f32) * scale).to_f32());
}

/// `x · Wᵀ` for a matrix of `rows` × `cols` and `x` of any rank whose last dimension is `cols`:
/// `columns(range, activations)` gives columns `range` of the product, column by column (each
/// column's positions together), on one worker per core (`job_threads::product_threads`).
pub fn by_columns(
    x: &Tensor,
    rows: usize,
    cols: usize,
    columns: impl Fn(std::ops::Range<usize>, &Activations) -> Vec<f32> + Sync,
) -> Result<Tensor> {
    let mut dims = x.dims().to_vec();
    let values = x.flatten_all()?.to_vec1::<f32>()?;
    let activations = Activations::of(&values, cols);
    let out = super::job_threads::by_output_rows(
        rows,
        activations.positions,
        super::job_threads::product_threads(),
        1,
        |range| columns(range, &activations),
    );
    *dims.last_mut().expect("a matrix's input has a dimension") = rows;
    Ok(Tensor::from_vec(out, dims, &Device::Cpu)?)
}

/// The unpacked kernels' tests' inputs: one matrix and activations of any length, odd widths and
/// magnitudes mixed.
#[cfg(test)]
pub mod fixtures {
    use candle_core::{Device, Tensor};

    /// Rows and columns of [`matrix`] (an odd row count, columns six blocks wide).
    pub const SHAPE: (usize, usize) = (37, 192);

    /// A `SHAPE` matrix of varied values.
    pub fn matrix() -> Tensor {
        let (rows, cols) = SHAPE;
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| (((i * 7919) % 2003) as f32 - 1001.0) / 613.0)
            .collect();
        Tensor::from_vec(values, (rows, cols), &Device::Cpu).unwrap()
    }

    /// `positions` rows of activations as wide as [`matrix`].
    pub fn activations(positions: usize) -> Vec<f32> {
        (0..positions * SHAPE.1)
            .map(|i| ((i * 31 % 97) as f32 - 48.0) / 23.0 * (1.0 + (i % 5) as f32))
            .collect()
    }
}
