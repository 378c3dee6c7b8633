//! A GGUF matrix kept at its own type between passes. candle widens F16 and BF16 matrices to
//! f32 when it loads them for a matmul, twice their size; an engine holding every format of a
//! model at once would hold each float format as f32, and every format's embedding table as f32
//! (Gemma's 262,144 × 640 table is 671 MB a format). Here a float matrix stays as stored and is
//! multiplied by hspi's own product (`float_product`: a few rows widened at a time, one
//! summation order on every CPU), and the tokens' rows of an embedding table are read from it as
//! stored: the same f32 values candle computes with, at the format's own size.

use std::borrow::Cow;
use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QMatMul, QStorage, QTensor};
use candle_core::{Device, Module, Tensor};
use half::{bf16, f16};

use super::float_product::{Panels, Weights};
use super::unpacked_q5::UnpackedQ5;
use super::unpacked_q8::UnpackedQ8;
use crate::error::Result;

/// A matrix for `x · Wᵀ`.
pub enum KeptMatrix {
    /// Quantised: candle multiplies it as stored.
    Resident(QMatMul),
    /// F32, F16 or BF16, as stored, multiplied by [`float_product`].
    Float(Box<Panels>),
    /// Q5_0 or Q5_1, its levels unpacked (candle's bits, faster).
    Unpacked(Box<UnpackedQ5>),
    /// Q8_0 or Q4_0 on an AVX2 CPU, its scales widened once (candle's AVX2 bits, faster).
    Unpacked8(Box<UnpackedQ8>),
}

/// `t`'s values (F32, F16 or BF16) in their stored type, packed for hspi's product; `None`
/// for another type.
fn float_panels(t: &QTensor) -> Result<Option<Panels>> {
    let (rows, cols) = t.shape().dims2()?;
    let data = t.data()?;
    let halves = || {
        data.chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    Ok(Some(match t.dtype() {
        GgmlDType::F32 => {
            let v: Vec<f32> = data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            Panels::new(Weights::F32(&v), rows, cols)
        }
        GgmlDType::F16 => {
            let v: Vec<f16> = halves().map(f16::from_bits).collect();
            Panels::new(Weights::F16(&v), rows, cols)
        }
        GgmlDType::BF16 => {
            let v: Vec<bf16> = halves().map(bf16::from_bits).collect();
            Panels::new(Weights::Bf16(&v), rows, cols)
        }
        _ => return Ok(None),
    }))
}

impl KeptMatrix {
    pub fn new(t: Arc<QTensor>) -> Result<KeptMatrix> {
        super::kernel_tier::pin();
        if let Some(float) = float_panels(&t)? {
            return Ok(KeptMatrix::Float(Box::new(float)));
        }
        Ok(match (UnpackedQ5::new(&t)?, UnpackedQ8::new(&t)?) {
            (Some(unpacked), _) => KeptMatrix::Unpacked(Box::new(unpacked)),
            (_, Some(unpacked)) => KeptMatrix::Unpacked8(Box::new(unpacked)),
            _ => KeptMatrix::Resident(QMatMul::from_arc(t)?),
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(match self {
            KeptMatrix::Resident(m) => m.forward(x)?,
            KeptMatrix::Float(m) => m.linear(x)?,
            KeptMatrix::Unpacked(m) => m.forward(x)?,
            KeptMatrix::Unpacked8(m) => m.forward(x)?,
        })
    }
}

/// Rows `range` of a matrix `cols` wide stored as `data` in `dtype`, as a matrix of their own
/// (the same bytes: a row is whole blocks).
fn rows_of(
    data: &[u8],
    dtype: GgmlDType,
    cols: usize,
    range: std::ops::Range<usize>,
) -> Result<QTensor> {
    let row_bytes = cols / dtype.block_size() * dtype.type_size();
    let bytes = &data[range.start * row_bytes..range.end * row_bytes];
    let storage = QStorage::from_data(Cow::Borrowed(bytes), &Device::Cpu, dtype)?;
    Ok(QTensor::new(storage, (range.len(), cols))?)
}

/// A mixture of experts' stacked matrices (`[experts, rows, cols]`, as GGUF stores
/// `ffn_gate_exps`), one matrix per expert.
pub fn experts(stacked: &QTensor) -> Result<Vec<KeptMatrix>> {
    let (count, rows, cols) = stacked.shape().dims3()?;
    let data = stacked.data()?;
    (0..count)
        .map(|e| {
            KeptMatrix::new(Arc::new(rows_of(
                &data,
                stacked.dtype(),
                cols,
                e * rows..(e + 1) * rows,
            )?))
        })
        .collect()
}

/// `t` (any rank, its last dimension whole blocks) as the matrix of its rows: how a 3-D stack of
/// experts is quantised, row by row, as ggml does.
pub fn as_matrix(t: &Tensor) -> Result<Tensor> {
    let cols = t.dims().last().copied().unwrap_or(0);
    Ok(t.reshape((t.elem_count() / cols.max(1), cols))?)
}

/// A quantised matrix of `q`'s rows given back the shape `dims` (the same bytes).
pub fn reshaped(q: &QTensor, dims: &[usize]) -> Result<QTensor> {
    let storage = QStorage::from_data(Cow::Owned(q.data()?.into_owned()), &Device::Cpu, q.dtype())?;
    Ok(QTensor::new(storage, dims)?)
}

/// An embedding table (`[vocab, hidden]`) of any GGUF type, whose rows are dequantised when
/// looked up.
pub struct KeptTable {
    table: Arc<QTensor>,
    cols: usize,
    row_bytes: usize,
}

impl KeptTable {
    pub fn new(table: Arc<QTensor>) -> Result<KeptTable> {
        let (_, cols) = table.shape().dims2()?;
        let dtype = table.dtype();
        Ok(KeptTable {
            row_bytes: cols / dtype.block_size() * dtype.type_size(),
            cols,
            table,
        })
    }

    /// The rows of `ids`, in f32 (`[ids, hidden]`).
    pub fn rows(&self, ids: &[u32]) -> Result<Tensor> {
        let data = self.table.data()?;
        let vocab = data.len() / self.row_bytes.max(1);
        let rows = ids
            .iter()
            .map(|&id| {
                let id = id as usize;
                if id >= vocab {
                    return Err(candle_core::Error::Msg(format!(
                        "token {id} is outside the vocabulary of {vocab}"
                    ))
                    .into());
                }
                let bytes = &data[id * self.row_bytes..(id + 1) * self.row_bytes];
                let storage =
                    QStorage::from_data(Cow::Borrowed(bytes), &Device::Cpu, self.table.dtype())?;
                Ok(QTensor::new(storage, (1, self.cols))?.dequantize(&Device::Cpu)?)
            })
            .collect::<Result<Vec<Tensor>>>()?;
        Ok(Tensor::cat(&rows, 0)?)
    }
}

/// Write a kept file at `path` through `write`: to a file of its own first, renamed when whole,
/// so a file of that name is complete (a cache that cannot be written costs the next load its
/// time, nothing else).
pub fn write_whole(
    path: &std::path::Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Unique to this write: two formats may keep the same weights at once (`f16` and
    // `f16+kv-q8_0`), from two threads.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let part = path.with_extension(format!("part-{}-{n}", std::process::id()));
    let attempt = || -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&part)?);
        write(&mut w)?;
        std::io::Write::flush(&mut w)?;
        std::fs::rename(&part, path)
    };
    attempt().inspect_err(|_| {
        let _ = std::fs::remove_file(&part);
    })
}

#[cfg(test)]
mod tests {
    use super::super::bits;
    use super::*;

    /// A float matrix multiplies as hspi's float product of its values widened to f32, at each
    /// stored type, one position and several.
    #[test]
    fn a_float_matrix_is_multiplied_by_the_fixed_order_product() {
        let (rows, cols) = (37, 72);
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| (((i * 7919) % 2003) as f32 - 1001.0) / 613.0)
            .collect();
        let source = Tensor::from_vec(values, (rows, cols), &Device::Cpu).unwrap();
        for dtype in [GgmlDType::F32, GgmlDType::F16, GgmlDType::BF16] {
            let q = Arc::new(QTensor::quantize(&source, dtype).unwrap());
            let widened: Vec<f32> = q
                .dequantize(&Device::Cpu)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            for positions in [1, 7] {
                let x: Vec<f32> = (0..positions * cols)
                    .map(|i| ((i * 31 % 97) as f32 - 48.0) / 23.0)
                    .collect();
                let want =
                    super::super::float_product::product(&x, Weights::F32(&widened), rows, cols);
                let x = Tensor::from_vec(x, (1, positions, cols), &Device::Cpu).unwrap();
                let kept = KeptMatrix::new(q.clone()).unwrap().forward(&x).unwrap();
                assert_eq!(kept.dims(), &[1, positions, rows]);
                let got: Vec<u32> = bits(&kept);
                let want: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
                assert!(got == want, "{dtype:?}, {positions} positions");
            }
        }
    }

    /// A stack of experts split per expert multiplies as each expert's own matrix does.
    #[test]
    fn each_expert_of_a_stack_is_its_own_matrix() {
        let (count, rows, cols) = (3, 8, 64);
        let values: Vec<f32> = (0..count * rows * cols)
            .map(|i| ((i * 13 % 71) as f32 - 35.0) / 9.0)
            .collect();
        let stack = Tensor::from_vec(values, (count, rows, cols), &Device::Cpu).unwrap();
        let x = Tensor::ones((1, 2, cols), candle_core::DType::F32, &Device::Cpu).unwrap();
        for dtype in [GgmlDType::F32, GgmlDType::Q8_0] {
            let q = QTensor::quantize(&as_matrix(&stack).unwrap(), dtype).unwrap();
            let q = reshaped(&q, &[count, rows, cols]).unwrap();
            let each = experts(&q).unwrap();
            assert_eq!(each.len(), count);
            for (e, m) in each.iter().enumerate() {
                let rows_e: Vec<f32> = stack
                    .get(e)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1()
                    .unwrap();
                let own = Tensor::from_vec(rows_e, (rows, cols), &Device::Cpu).unwrap();
                let own = QTensor::quantize(&own, dtype).unwrap();
                let want = KeptMatrix::new(Arc::new(own)).unwrap().forward(&x).unwrap();
                let got = m.forward(&x).unwrap();
                assert_eq!(
                    got.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                    want.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                    "{dtype:?} expert {e}"
                );
            }
        }
    }

    /// Rows looked up one by one are the rows of the whole table dequantised, at each type.
    #[test]
    fn rows_are_the_tables_rows() {
        let values: Vec<f32> = (0..8 * 256)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
            .collect();
        let source = Tensor::from_vec(values, (8, 256), &Device::Cpu).unwrap();
        for dtype in [
            GgmlDType::F32,
            GgmlDType::F16,
            GgmlDType::Q8_0,
            GgmlDType::Q4K,
        ] {
            let q = Arc::new(QTensor::quantize(&source, dtype).unwrap());
            let whole = q.dequantize(&Device::Cpu).unwrap();
            let table = KeptTable::new(q).unwrap();
            let rows = table.rows(&[5, 0, 5]).unwrap();
            let want = whole
                .index_select(&Tensor::new(&[5u32, 0, 5], &Device::Cpu).unwrap(), 0)
                .unwrap();
            assert_eq!(
                rows.to_vec2::<f32>().unwrap(),
                want.to_vec2::<f32>().unwrap(),
                "{dtype:?}"
            );
            assert!(
                table.rows(&[8]).is_err(),
                "{dtype:?}: a token past the vocabulary"
            );
        }
    }
}
