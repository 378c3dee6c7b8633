//! Dot products the way GPU CUDA-core kernels compute them: an accumulator of a chosen precision,
//! a reduction order (sequential, pairwise tree, K-tiles, lanes of a warp summed by a butterfly,
//! or interleaved slices added in order), split-K partials combined in f32, and fused or
//! separate multiply-add. An f32 FMA rounds once (`f32::mul_add`); other steps are exact in f64
//! and rounded to the accumulator where a kernel rounds. Tensor-core orders are `tensor_core`'s.

use hspi_datasets::{Accumulator, KernelOptions, ReductionOrder};

use crate::rounding::{round_bf16, round_f16};

#[derive(Debug, Clone, Copy)]
pub struct Gemm {
    pub kernel: KernelOptions,
}

impl Gemm {
    fn round(&self, x: f64) -> f64 {
        match self.kernel.accumulator {
            Accumulator::F32 => x as f32 as f64,
            Accumulator::F16 => round_f16(x as f32) as f64,
            Accumulator::Bf16 => round_bf16(x as f32) as f64,
        }
    }

    /// acc + a·b: one rounding with FMA, two without.
    fn mac(&self, acc: f64, a: f32, b: f32) -> f64 {
        if self.kernel.fma && self.kernel.accumulator == Accumulator::F32 {
            // One rounding: via f64 the sum could round twice when the exponents lie far apart.
            return a.mul_add(b, acc as f32) as f64;
        }
        let p = a as f64 * b as f64; // exact: 24+24 bits fit in f64's 53
        if self.kernel.fma {
            self.round(acc + p)
        } else {
            self.round(acc + self.round(p))
        }
    }

    fn chain(&self, a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .fold(0.0, |acc, (x, y)| self.mac(acc, *x, *y))
    }

    fn pairwise(&self, a: &[f32], b: &[f32]) -> f64 {
        if a.len() <= 2 {
            return self.chain(a, b);
        }
        let mid = a.len().div_ceil(2);
        let left = self.pairwise(&a[..mid], &b[..mid]);
        let right = self.pairwise(&a[mid..], &b[mid..]);
        self.round(left + right)
    }

    /// Partial j chains, from zero, the vectors of `vector` elements at j·vector +
    /// t·count·vector: K dealt round-robin to `count` lanes or slices.
    fn dealt(&self, a: &[f32], b: &[f32], count: usize, vector: usize) -> Vec<f64> {
        let mut partial = vec![0f64; count];
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let j = (i / vector) % count;
            partial[j] = self.mac(partial[j], *x, *y);
        }
        partial
    }

    /// K dealt to `lanes` lanes; lane j then takes lane j + half for half = lanes/2 … 1, as a
    /// warp's shuffle-down reduction does.
    fn lanes(&self, a: &[f32], b: &[f32], lanes: usize, vector: usize) -> f64 {
        let mut partial = self.dealt(a, b, lanes, vector);
        let mut half = lanes / 2;
        while half > 0 {
            for j in 0..half {
                partial[j] = self.round(partial[j] + partial[j + half]);
            }
            half /= 2;
        }
        partial[0]
    }

    /// K dealt to `slices` slices, whose partials are then added in slice order.
    fn interleaved(&self, a: &[f32], b: &[f32], slices: usize, vector: usize) -> f64 {
        let partial = self.dealt(a, b, slices, vector);
        partial
            .iter()
            .skip(1)
            .fold(partial[0], |acc, p| self.round(acc + p))
    }

    fn reduce(&self, a: &[f32], b: &[f32]) -> f64 {
        match self.kernel.order {
            // Refused by the emulated backends; sequential is the nearest meaning.
            ReductionOrder::Sequential
            | ReductionOrder::Library
            | ReductionOrder::TensorCore { .. } => self.chain(a, b),
            ReductionOrder::Lanes { lanes, vector } => {
                self.lanes(a, b, lanes as usize, vector as usize)
            }
            ReductionOrder::Interleaved { slices, vector } => {
                self.interleaved(a, b, slices as usize, vector as usize)
            }
            ReductionOrder::Pairwise => self.pairwise(a, b),
            ReductionOrder::Blocked { tile } => {
                let tile = tile as usize;
                a.chunks(tile)
                    .zip(b.chunks(tile))
                    .fold(0.0, |acc, (ta, tb)| self.round(acc + self.chain(ta, tb)))
            }
        }
    }

    /// Σ a[i]·b[i] as the configured kernel computes it.
    pub fn dot(&self, a: &[f32], b: &[f32]) -> f32 {
        debug_assert_eq!(a.len(), b.len());
        let splits = (self.kernel.split_k as usize).clamp(1, a.len().max(1));
        if splits == 1 {
            return self.reduce(a, b) as f32;
        }
        // Each split writes its partial to an f32 workspace; a second pass sums them in order.
        let len = a.len().div_ceil(splits);
        a.chunks(len)
            .zip(b.chunks(len))
            .fold(0f32, |acc, (sa, sb)| acc + self.reduce(sa, sb) as f32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gemm(accumulator: Accumulator, order: ReductionOrder, split_k: u32, fma: bool) -> Gemm {
        Gemm {
            kernel: KernelOptions {
                accumulator,
                order,
                split_k,
                fma,
            },
        }
    }

    #[test]
    fn exact_sums_agree_in_every_configuration() {
        let a: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let b = vec![1.0f32; 100];
        for order in [
            ReductionOrder::Sequential,
            ReductionOrder::Pairwise,
            ReductionOrder::Blocked { tile: 16 },
        ] {
            for sk in [1, 2, 4, 8] {
                for fma in [true, false] {
                    assert_eq!(gemm(Accumulator::F32, order, sk, fma).dot(&a, &b), 4950.0);
                }
            }
        }
    }

    #[test]
    fn order_changes_rounding() {
        // 1 + many tiny values: sequential loses them, pairwise keeps them.
        let mut a = vec![1.0f32];
        a.extend(std::iter::repeat_n(2f32.powi(-25), 64));
        let b = vec![1.0f32; a.len()];
        let seq = gemm(Accumulator::F32, ReductionOrder::Sequential, 1, true).dot(&a, &b);
        let pair = gemm(Accumulator::F32, ReductionOrder::Pairwise, 1, true).dot(&a, &b);
        assert_eq!(seq, 1.0);
        assert!(pair > 1.0);
    }

    #[test]
    fn f16_accumulator_saturates_where_f32_does_not() {
        let a = vec![300.0f32; 300];
        let b = vec![1.0f32; 300];
        assert_eq!(
            gemm(Accumulator::F32, ReductionOrder::Sequential, 1, true).dot(&a, &b),
            90000.0
        );
        assert!(gemm(Accumulator::F16, ReductionOrder::Sequential, 1, true)
            .dot(&a, &b)
            .is_infinite());
    }

    #[test]
    fn lanes_sum_strided_vectors_then_fold_in_halves() {
        // 16 lanes × 4: lane j holds elements 4j..4j+4 of 64; the butterfly adds lane j + 8 to
        // lane j first. With 1 + 2^-24 spread so that only the tree meets them, the lane order
        // keeps what a sequential chain loses.
        let mut a = vec![0f32; 64];
        a[0] = 1.0;
        a[16] = 2f32.powi(-24);
        a[48] = 2f32.powi(-24);
        let b = vec![1f32; 64];
        let lanes = ReductionOrder::Lanes {
            lanes: 16,
            vector: 4,
        };
        let seq = gemm(Accumulator::F32, ReductionOrder::Sequential, 1, true).dot(&a, &b);
        let tree = gemm(Accumulator::F32, lanes, 1, true).dot(&a, &b);
        assert_eq!(seq, 1.0);
        assert_eq!(tree, 1.0 + 2f32.powi(-23));
    }

    #[test]
    fn interleaved_slices_are_added_in_order_not_by_a_tree() {
        // 4 slices of one element: in order ((1 + 2^-24) + 0) + 2^-24 loses both halves; the
        // butterfly pairs the two 2^-24 first and keeps them.
        let a = [1.0, 2f32.powi(-24), 0.0, 2f32.powi(-24)];
        let b = [1f32; 4];
        let order = gemm(
            Accumulator::F32,
            ReductionOrder::Interleaved {
                slices: 4,
                vector: 1,
            },
            1,
            true,
        );
        let tree = gemm(
            Accumulator::F32,
            ReductionOrder::Lanes {
                lanes: 4,
                vector: 1,
            },
            1,
            true,
        );
        assert_eq!(order.dot(&a, &b), 1.0);
        assert_eq!(tree.dot(&a, &b), 1.0 + 2f32.powi(-23));
    }

    #[test]
    fn fma_rounds_once() {
        // x·x = 1 + 2^-11 + 2^-24 needs 25 bits: rounded alone it loses the 2^-24.
        let x = 1.0 + 2f32.powi(-12);
        let a = [-1.0, x];
        let b = [1.0, x];
        let fused = gemm(Accumulator::F32, ReductionOrder::Sequential, 1, true).dot(&a, &b);
        let split = gemm(Accumulator::F32, ReductionOrder::Sequential, 1, false).dot(&a, &b);
        assert_ne!(fused, split);
    }
}
