//! hspi's one product of float matrices on a CPU, `x · Wᵀ`, with one summation order on every
//! CPU. candle's CPU matmul goes through the `gemm` crate, which picks its kernel by what the CPU
//! has (AVX-512 or AVX2) and splits the summed dimension into blocks sized by the CPU's caches
//! (`gemm-common`'s `kernel_params`): the same f32 product grouped its sums otherwise on a Xeon
//! and on an EPYC, and every float reference differed by ulps from machine to machine (80 of 80
//! records of an atlas dataset recomputed). Here each output is a fixed sum whatever the CPU, the
//! thread count or the number of positions: the products of one output summed in order of the
//! columns, each a fused multiply-add onto the running sum (one rounding), from 0 — the order a
//! blocked GEMM keeps within a block of the summed dimension (`gemm`'s kernels, oneDNN's), so
//! where `gemm` took a width in one block (SmolLM2's on the Xeon) the bits are its bits.
//!
//! With AVX2 and FMA eight rows of `W` are summed side by side in a register's lanes (the
//! rows widened and laid column by column, eight at a time); elsewhere the same steps run one
//! value at a time (`f32::mul_add` is the fused operation on every CPU): the same bits, slower
//! (`the_avx2_kernel_gives_the_defined_sums_bits`). F16 and BF16 weights are widened to f32 a
//! few rows at a time (exact), never a whole matrix.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use candle_core::{Device, Tensor};

use super::job_threads;
use crate::error::Result;

/// The weights `W` (`[rows, cols]`, row by row) in their stored type.
#[derive(Clone, Copy)]
pub enum Weights<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
    Bf16(&'a [bf16]),
}

impl Weights<'_> {
    fn len(&self) -> usize {
        match self {
            Weights::F32(w) => w.len(),
            Weights::F16(w) => w.len(),
            Weights::Bf16(w) => w.len(),
        }
    }

    /// Rows `range` (each `cols` wide) as f32 into `out`.
    fn widen(&self, range: std::ops::Range<usize>, cols: usize, out: &mut Vec<f32>) {
        let at = range.start * cols..range.end * cols;
        out.clear();
        match self {
            Weights::F32(w) => out.extend_from_slice(&w[at]),
            Weights::F16(w) => {
                out.resize(at.len(), 0.0);
                w[at].convert_to_f32_slice(out);
            }
            Weights::Bf16(w) => {
                out.resize(at.len(), 0.0);
                w[at].convert_to_f32_slice(out);
            }
        }
    }
}

/// A matrix `W` packed once for [`Panels::product`]: each eight rows column by column
/// (`[(g * cols + k) * 8 + j]` = row `8g + j`, column `k`; rows past the end zero), in its
/// stored type. The product then widens each block's panels in one sequential pass instead of
/// gathering them from the rows at every call (a quarter of a short context's time).
pub struct Panels {
    rows: usize,
    cols: usize,
    values: PanelValues,
}

enum PanelValues {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
}

impl Panels {
    pub fn new(w: Weights<'_>, rows: usize, cols: usize) -> Panels {
        assert_eq!(
            w.len(),
            rows * cols,
            "a {rows}×{cols} matrix of {} values",
            w.len()
        );
        let values = match w {
            Weights::F32(w) => PanelValues::F32(pack_rows(w, rows, cols)),
            Weights::F16(w) => PanelValues::F16(pack_rows(w, rows, cols)),
            Weights::Bf16(w) => PanelValues::Bf16(pack_rows(w, rows, cols)),
        };
        Panels { rows, cols, values }
    }

    /// `x · Wᵀ` (`[positions, rows]`), the sums of [`product`].
    pub fn product(&self, x: &[f32]) -> Vec<f32> {
        let (rows, cols) = (self.rows, self.cols);
        assert!(
            cols > 0 && x.len().is_multiple_of(cols),
            "a product of {} inputs by a {rows}×{cols} matrix",
            x.len()
        );
        split(
            x,
            Source::Panels(self),
            rows,
            cols,
            workers_for(x.len() * rows),
        )
    }

    /// [`Self::product`] for a tensor `x` of any rank whose last dimension is the width.
    pub fn linear(&self, x: &Tensor) -> Result<Tensor> {
        let mut dims = x.dims().to_vec();
        if dims.last() != Some(&self.cols) {
            return Err(candle_core::Error::Msg(format!(
                "inputs of {dims:?} for a matrix {} wide",
                self.cols
            ))
            .into());
        }
        let out = self.product(&x.flatten_all()?.to_vec1::<f32>()?);
        *dims.last_mut().expect("checked above") = self.rows;
        Ok(Tensor::from_vec(out, dims, &Device::Cpu)?)
    }

    /// The panels of rows `start..end` (`start` a multiple of eight) as f32.
    fn widen(&self, start: usize, end: usize, out: &mut Vec<f32>) {
        let at = start / LANES * LANES * self.cols..end.div_ceil(LANES) * LANES * self.cols;
        out.clear();
        out.resize(at.len(), 0.0);
        match &self.values {
            PanelValues::F32(v) => out.copy_from_slice(&v[at]),
            PanelValues::F16(v) => v[at].convert_to_f32_slice(out),
            PanelValues::Bf16(v) => v[at].convert_to_f32_slice(out),
        }
    }
}

/// `rows` rows of `cols` values (row by row) as eight-row panels.
fn pack_rows<T: Copy + Default>(w: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = Vec::new();
    pack_into(w, rows, cols, &mut out);
    out
}

/// `rows` rows of `cols` values into `out` as eight-row panels (`[(g * cols + k) * 8 + j]` =
/// row `8g + j`, column `k`; rows past the last zero).
fn pack_into<T: Copy + Default>(w: &[T], rows: usize, cols: usize, out: &mut Vec<T>) {
    out.clear();
    out.resize(rows.div_ceil(LANES) * LANES * cols, T::default());
    for (r, row) in w.chunks_exact(cols.max(1)).enumerate() {
        let (g, j) = (r / LANES, r % LANES);
        for (k, v) in row.iter().enumerate() {
            out[(g * cols + k) * LANES + j] = *v;
        }
    }
}

/// Where a product's weights come from: rows as stored, or panels packed once.
#[derive(Clone, Copy)]
enum Source<'a> {
    Rows(Weights<'a>),
    Panels(&'a Panels),
}

impl Source<'_> {
    /// Rows `start..end` (`start` a multiple of eight) as f32 panels into `panel`, through
    /// `scratch`.
    fn panels(
        &self,
        start: usize,
        end: usize,
        cols: usize,
        scratch: &mut Vec<f32>,
        panel: &mut Vec<f32>,
    ) {
        match self {
            Source::Panels(p) => p.widen(start, end, panel),
            Source::Rows(w) => {
                w.widen(start..end, cols, scratch);
                pack_into(scratch, end - start, cols, panel);
            }
        }
    }

    /// Rows `start..end` as f32 rows into `out`.
    fn rows(&self, start: usize, end: usize, cols: usize, out: &mut Vec<f32>) {
        match self {
            Source::Rows(w) => w.widen(start..end, cols, out),
            Source::Panels(p) => {
                let mut panel = Vec::new();
                p.widen(start, end, &mut panel);
                out.clear();
                for r in 0..end - start {
                    let (g, j) = (r / LANES, r % LANES);
                    out.extend((0..cols).map(|k| panel[(g * cols + k) * LANES + j]));
                }
            }
        }
    }
}

/// Rows of `W` summed side by side in one register.
const LANES: usize = 8;
/// Rows of `W` taken together (widened together, each position's value shared by them).
const ROW_BLOCK: usize = 2 * LANES;
/// Fewer multiply-adds than this run on the caller's thread alone.
const SPLIT_FROM: usize = 1 << 18;

/// `x · Wᵀ`: `x` is `[positions, cols]` (row by row), `w` is `[rows, cols]`; the product is
/// `[positions, rows]`.
pub fn product(x: &[f32], w: Weights<'_>, rows: usize, cols: usize) -> Vec<f32> {
    assert!(
        cols > 0 && x.len().is_multiple_of(cols) && w.len() == rows * cols,
        "a product of {} inputs by a {rows}×{cols} matrix of {} values",
        x.len(),
        w.len()
    );
    split(x, Source::Rows(w), rows, cols, workers_for(x.len() * rows))
}

/// Threads for a product of `multiply_adds`.
fn workers_for(multiply_adds: usize) -> usize {
    if multiply_adds < SPLIT_FROM {
        1
    } else {
        job_threads::product_threads()
    }
}

/// [`product`] split over `workers` threads by rows of `W`.
fn split(x: &[f32], w: Source<'_>, rows: usize, cols: usize, workers: usize) -> Vec<f32> {
    let positions = x.len() / cols;
    job_threads::by_output_rows(rows, positions, workers, ROW_BLOCK, |range| {
        rows_of_product(x, positions, w, cols, range)
    })
}

/// `a · bᵀ` for each leading entry: `a` is `[.., m, k]` (say a pass's query heads), `b` is
/// `[.., n, k]` with a leading count dividing `a`'s (its key heads, each shared by a group of
/// query heads in order, as `repeat_kv` repeats them); the product is `[.., m, n]`. Entries run
/// on the cores side by side.
pub fn batched(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a_dims, b_dims) = (a.dims(), b.dims());
    let rank = a_dims.len();
    assert!(
        rank >= 2 && b_dims.len() == rank,
        "batched products of {a_dims:?} by {b_dims:?}"
    );
    let (m, k) = (a_dims[rank - 2], a_dims[rank - 1]);
    let n = b_dims[rank - 2];
    assert_eq!(
        b_dims[rank - 1],
        k,
        "batched products of {a_dims:?} by {b_dims:?}"
    );
    let entries: usize = a_dims[..rank - 2].iter().product();
    let shared: usize = b_dims[..rank - 2].iter().product();
    assert!(
        shared > 0 && entries.is_multiple_of(shared),
        "batched products of {a_dims:?} by {b_dims:?}"
    );
    let group = entries / shared;
    let av = a.flatten_all()?.to_vec1::<f32>()?;
    let bv = b.flatten_all()?.to_vec1::<f32>()?;
    let one = |e: usize| {
        let bs = &bv[e / group * n * k..(e / group + 1) * n * k];
        split(
            &av[e * m * k..(e + 1) * m * k],
            Source::Rows(Weights::F32(bs)),
            n,
            k,
            1,
        )
    };
    let workers = if av.len() * n < SPLIT_FROM {
        1
    } else {
        job_threads::product_threads().min(entries)
    };
    let per = entries.div_ceil(workers.max(1)).max(1);
    let mut parts: Vec<Vec<f32>> = vec![Vec::new(); entries.div_ceil(per)];
    std::thread::scope(|scope| {
        for (i, part) in parts.iter_mut().enumerate() {
            let one = &one;
            let mut run = move || {
                *part = (i * per..((i + 1) * per).min(entries))
                    .flat_map(one)
                    .collect();
            };
            if workers == 1 {
                run();
            } else {
                scope.spawn(run);
            }
        }
    });
    let mut dims = a_dims.to_vec();
    dims[rank - 1] = n;
    Ok(Tensor::from_vec(parts.concat(), dims, &Device::Cpu)?)
}

/// The products of rows `range` of `W` with every position, row by row (`[range, positions]`).
fn rows_of_product(
    x: &[f32],
    positions: usize,
    w: Source<'_>,
    cols: usize,
    range: std::ops::Range<usize>,
) -> Vec<f32> {
    let mut out = vec![0f32; range.len() * positions];
    let mut scratch = Vec::with_capacity(ROW_BLOCK * cols);
    let mut panel = Vec::with_capacity(ROW_BLOCK * cols);
    let fast = avx2_fma();
    for start in range.clone().step_by(ROW_BLOCK) {
        let end = (start + ROW_BLOCK).min(range.end);
        let block = &mut out[(start - range.start) * positions..(end - range.start) * positions];
        if fast {
            w.panels(start, end, cols, &mut scratch, &mut panel);
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 and FMA are present (`avx2_fma`).
            unsafe {
                avx2::rows(
                    x,
                    positions,
                    &panel,
                    (end - start).div_ceil(LANES),
                    cols,
                    block,
                )
            };
        } else {
            w.rows(start, end, cols, &mut scratch);
            for (r, row) in scratch.chunks_exact(cols).enumerate() {
                for p in 0..positions {
                    block[r * positions + p] = defined_sum(&x[p * cols..(p + 1) * cols], row);
                }
            }
        }
    }
    out
}

/// Whether this CPU has AVX2 and FMA.
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

/// The sum this module defines, one value at a time: `a · b` in order, each product fused
/// onto the running sum.
pub fn defined_sum(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0f32, |sum, (a, b)| a.mul_add(*b, sum))
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::LANES;

    /// `block[r * positions + p]` = row `r` of the `groups` panels of eight rows (`panel`,
    /// column by column) times position `p` of `x`, for the block's rows: two panels and four
    /// positions at a time, each position's value broadcast to the panels' lanes.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rows(
        x: &[f32],
        positions: usize,
        panel: &[f32],
        groups: usize,
        cols: usize,
        block: &mut [f32],
    ) {
        let rows = block.len() / positions.max(1);
        let mut g = 0;
        while g < groups {
            let two = groups - g >= 2;
            let mut p = 0;
            while p < positions {
                let n = (positions - p).min(4);
                // SAFETY (every call): the panels hold `groups * cols * LANES` values and `x`
                // `positions * cols`, which bound every index the tile reads.
                match (two, n) {
                    (true, 4) => unsafe {
                        tile::<2, 4>(x, p, panel, g, cols, block, rows, positions)
                    },
                    (true, _) => (p..p + n).for_each(|q| unsafe {
                        tile::<2, 1>(x, q, panel, g, cols, block, rows, positions)
                    }),
                    (false, 4) => unsafe {
                        tile::<1, 4>(x, p, panel, g, cols, block, rows, positions)
                    },
                    (false, _) => (p..p + n).for_each(|q| unsafe {
                        tile::<1, 1>(x, q, panel, g, cols, block, rows, positions)
                    }),
                }
                p += n;
            }
            g += if two { 2 } else { 1 };
        }
    }

    /// Panels `g0..g0 + G` by positions `p0..p0 + P`: each lane's sum over the columns in
    /// order, fused.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile<const G: usize, const P: usize>(
        x: &[f32],
        p0: usize,
        panel: &[f32],
        g0: usize,
        cols: usize,
        block: &mut [f32],
        rows: usize,
        positions: usize,
    ) {
        let mut acc = [[_mm256_setzero_ps(); P]; G];
        let xs: [*const f32; P] = std::array::from_fn(|i| x[(p0 + i) * cols..].as_ptr());
        let ps: [*const f32; G] =
            std::array::from_fn(|i| panel[(g0 + i) * cols * LANES..].as_ptr());
        for k in 0..cols {
            // SAFETY: column `k` of each panel and of each position lies within the slices.
            let wv: [__m256; G] =
                std::array::from_fn(|i| unsafe { _mm256_loadu_ps(ps[i].add(k * LANES)) });
            for (i, xp) in xs.iter().enumerate() {
                // SAFETY: as above.
                let xv = unsafe { _mm256_broadcast_ss(&*xp.add(k)) };
                for (gi, wv) in wv.iter().enumerate() {
                    acc[gi][i] = _mm256_fmadd_ps(xv, *wv, acc[gi][i]);
                }
            }
        }
        for (gi, acc) in acc.iter().enumerate() {
            for (i, acc) in acc.iter().enumerate() {
                let mut lanes = [0f32; LANES];
                // SAFETY: `lanes` holds eight f32.
                unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), *acc) };
                for (j, v) in lanes.iter().enumerate() {
                    let r = (g0 + gi) * LANES + j;
                    if r < rows {
                        block[r * positions + p0 + i] = *v;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let v = ((i * 7919 + seed * 104_729) % 2003) as f32 - 1001.0;
                v / 613.0 * (1.0 + (i % 7) as f32 * 1e-3)
            })
            .collect()
    }

    /// Every output of every shape (widths in and beside whole lanes, row and position counts
    /// beside whole tiles, a product large enough to split over the cores), each weight type:
    /// the bits of the defined sum taken one value at a time.
    #[test]
    fn the_avx2_kernel_gives_the_defined_sums_bits() {
        for (positions, rows, cols) in
            [(1, 1, 1), (3, 5, 7), (2, 9, 64), (5, 13, 101), (7, 600, 96)]
        {
            let x = values(positions * cols, 1);
            let w32 = values(rows * cols, 2);
            let w16: Vec<f16> = w32.iter().map(|v| f16::from_f32(*v)).collect();
            let wb: Vec<bf16> = w32.iter().map(|v| bf16::from_f32(*v)).collect();
            for w in [Weights::F32(&w32), Weights::F16(&w16), Weights::Bf16(&wb)] {
                let mut widened = Vec::new();
                w.widen(0..rows, cols, &mut widened);
                let got = product(&x, w, rows, cols);
                let packed = Panels::new(w, rows, cols).product(&x);
                assert_eq!(packed, got, "{positions}×{rows}×{cols}: packed once");
                for p in 0..positions {
                    for r in 0..rows {
                        let want = defined_sum(
                            &x[p * cols..(p + 1) * cols],
                            &widened[r * cols..(r + 1) * cols],
                        );
                        assert_eq!(
                            got[p * rows + r].to_bits(),
                            want.to_bits(),
                            "{positions}×{rows}×{cols}, position {p}, row {r}"
                        );
                    }
                }
            }
        }
    }

    /// An output's bits do not depend on which other rows and positions it is computed with.
    #[test]
    fn an_output_is_the_same_alone_and_among_others() {
        let (positions, rows, cols) = (6, 11, 200);
        let x = values(positions * cols, 3);
        let w = values(rows * cols, 4);
        let all = product(&x, Weights::F32(&w), rows, cols);
        for p in [0, 5] {
            for r in [0, 3, 10] {
                let one = product(
                    &x[p * cols..(p + 1) * cols],
                    Weights::F32(&w[r * cols..(r + 1) * cols]),
                    1,
                    cols,
                );
                assert_eq!(
                    one[0].to_bits(),
                    all[p * rows + r].to_bits(),
                    "position {p}, row {r}"
                );
            }
        }
    }

    /// Each entry of a batch is its own product, key heads shared by groups of query heads.
    #[test]
    fn a_batched_product_is_each_entrys_product() {
        let (heads, kv_heads, m, n, k) = (6, 2, 5, 4, 24);
        let a = values(heads * m * k, 5);
        let b = values(kv_heads * n * k, 6);
        let at = Tensor::from_vec(a.clone(), (1, heads, m, k), &Device::Cpu).unwrap();
        let bt = Tensor::from_vec(b.clone(), (1, kv_heads, n, k), &Device::Cpu).unwrap();
        let got = batched(&at, &bt).unwrap();
        assert_eq!(got.dims(), &[1, heads, m, n]);
        let got = got.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        for h in 0..heads {
            let kv = h / (heads / kv_heads);
            let want = product(
                &a[h * m * k..(h + 1) * m * k],
                Weights::F32(&b[kv * n * k..(kv + 1) * n * k]),
                n,
                k,
            );
            assert_eq!(&got[h * m * n..(h + 1) * m * n], &want[..], "head {h}");
        }
    }

    /// The sums are the products' sums, to float precision.
    #[test]
    fn a_product_is_the_matrix_product() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let w = [1.0, 0.0, -1.0, 0.5, 0.5, 0.5];
        assert_eq!(
            product(&x, Weights::F32(&w), 2, 3),
            vec![-2.0, 3.0, -2.0, 7.5]
        );
    }
}
