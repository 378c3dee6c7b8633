//! A quantised matrix's exact f32 values in less memory than f32. The served path computes each
//! market format's weights once, as f32 values; held as f32, eight formats of a 135M model took
//! 4.3 GB. Most schemes' values are bf16 numbers (bf16, FP8 weight-only, INT4, NVFP4, MXFP4), kept
//! as their 16 bits; INT8 and FP8 W8A8 values (a code times a bf16 scale per row) are not, but no
//! row has more than 256 distinct ones, kept as each row's distinct values and a byte per weight.
//! Whatever fits neither stays f32. Every form gives back the very values it was made from.

use std::io::{self, Read, Write};

use half::bf16;
use half::slice::HalfBitsSliceExt;

use super::float_product::{self, Weights};

pub enum CompactMatrix {
    /// Every value a bf16 number: its bits.
    Bf16(Vec<u16>),
    /// Each row's distinct values (`book[starts[r]..starts[r + 1]]`) and each weight's index.
    Coded {
        book: Vec<f32>,
        starts: Vec<usize>,
        codes: Vec<u8>,
        cols: usize,
    },
    F32(Vec<f32>),
}

impl CompactMatrix {
    /// `values`, rows of `cols`, in the smallest form that holds them exactly.
    pub fn new(values: Vec<f32>, cols: usize) -> CompactMatrix {
        if values
            .iter()
            .all(|v| bf16::from_f32(*v).to_f32().to_bits() == v.to_bits())
        {
            return CompactMatrix::Bf16(
                values
                    .iter()
                    .map(|v| bf16::from_f32(*v).to_bits())
                    .collect(),
            );
        }
        Self::coded(&values, cols).unwrap_or(CompactMatrix::F32(values))
    }

    /// Each row's distinct values and indices into them, where every row has at most 256 and
    /// the whole is smaller than f32.
    fn coded(values: &[f32], cols: usize) -> Option<CompactMatrix> {
        let (mut book, mut starts, mut codes) =
            (Vec::new(), vec![0], Vec::with_capacity(values.len()));
        for row in values.chunks(cols.max(1)) {
            let mut distinct: Vec<u32> = row.iter().map(|v| v.to_bits()).collect();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() > 256 {
                return None;
            }
            codes.extend(row.iter().map(|v| {
                distinct
                    .binary_search(&v.to_bits())
                    .expect("every value is in its row's book") as u8
            }));
            book.extend(distinct.iter().map(|b| f32::from_bits(*b)));
            starts.push(book.len());
        }
        (codes.len() + 4 * book.len() < 4 * values.len()).then_some(CompactMatrix::Coded {
            book,
            starts,
            codes,
            cols,
        })
    }

    /// The values, as they were given.
    pub fn values(&self) -> Vec<f32> {
        match self {
            CompactMatrix::Bf16(bits) => {
                bits.iter().map(|b| bf16::from_bits(*b).to_f32()).collect()
            }
            CompactMatrix::Coded {
                book,
                starts,
                codes,
                cols,
            } => codes
                .chunks(*cols)
                .zip(starts)
                .flat_map(|(row, start)| row.iter().map(move |c| book[start + *c as usize]))
                .collect(),
            CompactMatrix::F32(v) => v.clone(),
        }
    }

    /// `x · Wᵀ` by hspi's float product (`[positions, rows]`), this being `W` (`rows × cols`):
    /// bf16 values multiplied as stored, coded ones decoded for the product.
    pub fn product(&self, x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
        match self {
            CompactMatrix::Bf16(bits) => {
                float_product::product(x, Weights::Bf16(bits.reinterpret_cast()), rows, cols)
            }
            CompactMatrix::Coded { .. } => {
                float_product::product(x, Weights::F32(&self.values()), rows, cols)
            }
            CompactMatrix::F32(v) => float_product::product(x, Weights::F32(v), rows, cols),
        }
    }

    /// The values of row `r`.
    pub fn row(&self, r: usize, cols: usize) -> Vec<f32> {
        match self {
            CompactMatrix::Bf16(bits) => bits[r * cols..(r + 1) * cols]
                .iter()
                .map(|b| bf16::from_bits(*b).to_f32())
                .collect(),
            CompactMatrix::Coded {
                book,
                starts,
                codes,
                ..
            } => codes[r * cols..(r + 1) * cols]
                .iter()
                .map(|c| book[starts[r] + *c as usize])
                .collect(),
            CompactMatrix::F32(v) => v[r * cols..(r + 1) * cols].to_vec(),
        }
    }

    /// Written to `w` as [`Self::read`] reads it back (little-endian: a tag, then each array as
    /// its length and its elements).
    pub fn write(&self, w: &mut impl Write) -> io::Result<()> {
        match self {
            CompactMatrix::Bf16(bits) => {
                w.write_all(&[0])?;
                write_array(w, bits, |v| v.to_le_bytes())
            }
            CompactMatrix::Coded {
                book,
                starts,
                codes,
                cols,
            } => {
                w.write_all(&[1])?;
                w.write_all(&(*cols as u64).to_le_bytes())?;
                write_array(w, book, |v| v.to_le_bytes())?;
                write_array(w, starts, |v| (*v as u64).to_le_bytes())?;
                write_array(w, codes, |v| [*v])
            }
            CompactMatrix::F32(v) => {
                w.write_all(&[2])?;
                write_array(w, v, |v| v.to_le_bytes())
            }
        }
    }

    /// A matrix [`Self::write`] wrote; an error where the bytes are cut short or not one.
    pub fn read(r: &mut impl Read) -> io::Result<CompactMatrix> {
        let mut tag = [0u8];
        r.read_exact(&mut tag)?;
        Ok(match tag[0] {
            0 => CompactMatrix::Bf16(read_array(r, u16::from_le_bytes)?),
            1 => {
                let cols = read_u64(r)? as usize;
                let book = read_array(r, f32::from_le_bytes)?;
                let starts: Vec<usize> =
                    read_array(r, |b: [u8; 8]| u64::from_le_bytes(b) as usize)?;
                let codes = read_array(r, |b: [u8; 1]| b[0])?;
                let rows = codes.len().checked_div(cols).unwrap_or(0);
                let whole = starts.len() == rows + 1
                    && codes.len() == rows * cols
                    && starts.windows(2).all(|s| s[0] <= s[1])
                    && starts.last() == Some(&book.len())
                    && codes
                        .chunks(cols.max(1))
                        .zip(starts.windows(2))
                        .all(|(row, s)| row.iter().all(|c| s[0] + (*c as usize) < s[1]));
                if !whole {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a coded matrix whose indices fall outside its rows' values",
                    ));
                }
                CompactMatrix::Coded {
                    book,
                    starts,
                    codes,
                    cols,
                }
            }
            2 => CompactMatrix::F32(read_array(r, f32::from_le_bytes)?),
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unknown matrix form {other}"),
                ))
            }
        })
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        match self {
            CompactMatrix::Bf16(bits) => bits.len(),
            CompactMatrix::Coded { codes, .. } => codes.len(),
            CompactMatrix::F32(v) => v.len(),
        }
    }

    /// Bytes held.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        match self {
            CompactMatrix::Bf16(bits) => 2 * bits.len(),
            CompactMatrix::Coded {
                book,
                starts,
                codes,
                ..
            } => 4 * book.len() + 8 * starts.len() + codes.len(),
            CompactMatrix::F32(v) => 4 * v.len(),
        }
    }
}

pub(super) fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// `items` as their count, then each one's bytes.
pub(super) fn write_array<T, const N: usize>(
    w: &mut impl Write,
    items: &[T],
    bytes: impl Fn(&T) -> [u8; N],
) -> io::Result<()> {
    w.write_all(&(items.len() as u64).to_le_bytes())?;
    let mut buf = Vec::with_capacity(items.len() * N);
    items.iter().for_each(|t| buf.extend_from_slice(&bytes(t)));
    w.write_all(&buf)
}

/// What [`write_array`] wrote; a count past the bytes there is an error, not an allocation.
pub(super) fn read_array<T, const N: usize>(
    r: &mut impl Read,
    item: impl Fn([u8; N]) -> T,
) -> io::Result<Vec<T>> {
    let count = read_u64(r)? as usize;
    let mut buf = Vec::new();
    let read = r
        .take((count as u64).saturating_mul(N as u64))
        .read_to_end(&mut buf)?;
    if read != count * N {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "an array cut short",
        ));
    }
    Ok(buf
        .chunks_exact(N)
        .map(|c| item(c.try_into().expect("chunks of N")))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme;

    /// Each market scheme's weights come back bit for bit, in less than f32's memory.
    #[test]
    fn every_schemes_weights_come_back_exactly_and_smaller() {
        let (rows, cols) = (8, 1024);
        let weights: Vec<f32> = (0..rows * cols)
            .map(|i| {
                let x = ((i * 7919 % 1009) as f32 - 504.0) / 3000.0;
                scheme::round_bf16(x * x * x.signum() + x / 10.0)
            })
            .collect();
        for format in scheme::market_formats() {
            let s = scheme::for_format(format).unwrap();
            let mut w = weights.clone();
            s.weights(&mut w, cols);
            let compact = CompactMatrix::new(w.clone(), cols);
            let back = compact.values();
            assert!(
                back.iter().zip(&w).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{format}"
            );
            assert_eq!(compact.row(5, cols), w[5 * cols..6 * cols], "{format}");
            let x: Vec<f32> = (0..2 * cols).map(|i| (i % 13) as f32 - 6.0).collect();
            let want = float_product::product(&x, Weights::F32(&w), rows, cols);
            assert_eq!(compact.product(&x, rows, cols), want, "{format}: product");
            let mut bytes = Vec::new();
            compact.write(&mut bytes).unwrap();
            let read = CompactMatrix::read(&mut bytes.as_slice()).unwrap();
            assert!(
                read.values()
                    .iter()
                    .zip(&w)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{format}: read back"
            );
            assert!(
                CompactMatrix::read(&mut &bytes[..bytes.len() - 1]).is_err(),
                "{format}: cut short"
            );
            assert!(
                compact.bytes() <= 2 * w.len() + (rows + 1) * 8,
                "{format}: {} bytes",
                compact.bytes()
            );
        }
        let noise: Vec<f32> = (0..rows * cols).map(|i| (i as f32).sqrt() / 7.0).collect();
        let compact = CompactMatrix::new(noise.clone(), cols);
        assert!(
            matches!(compact, CompactMatrix::F32(_)),
            "no form holds noise exactly"
        );
        assert_eq!(compact.values(), noise);
    }
}
