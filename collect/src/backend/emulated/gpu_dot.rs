//! One GEMM kernel of a GPU, as it computes each output element: tensor-core blocks (`tcG`) or
//! CUDA-core FMAs (`seq`, `lnLxV`, …), with split-K. Split-K slices are contiguous runs of
//! ⌈K/S⌉ elements rounded up to whole blocks, each summed from a zero accumulator; their partials
//! are added in slice order in the accumulator's type, f32 or f16 (a deterministic reduction, as
//! cuBLAS's split-K reduce kernel). CUDA-core split-K is `gemm`'s.

use hspi_datasets::{Accumulator, KernelOptions, NumericFormat, ReductionOrder};

use super::gemm::Gemm;
use super::tensor_core::{Arch, BlockFma};
use crate::error::{CollectError, Result};
use crate::rounding::{round_f16, round_tf32};

#[derive(Debug, Clone, Copy)]
pub enum GpuDot {
    TensorCore {
        block: BlockFma,
        split_k: usize,
        /// f32 operands are rounded to tf32 as the kernel loads them.
        tf32: bool,
    },
    CudaCore(Gemm),
}

impl GpuDot {
    /// The kernel `kernel` for `format` operands on `arch`'s tensor cores, or on its CUDA cores.
    pub fn new(arch: Arch, format: NumericFormat, kernel: KernelOptions) -> Result<GpuDot> {
        let split_k = kernel.split_k.max(1) as usize;
        let bad = |reason: &str| CollectError::Kernel {
            kernel: kernel.to_string(),
            reason: reason.into(),
        };
        match kernel.order {
            ReductionOrder::TensorCore { group } => Ok(GpuDot::TensorCore {
                block: BlockFma::new(arch, format, kernel.accumulator, group)?,
                split_k,
                tf32: format == NumericFormat::Tf32,
            }),
            ReductionOrder::Library => Err(bad(
                "it leaves the order to the library: name it (acc-f32.tc16.sk1.fma, \
                 acc-f32.ln16x4.sk1.fma, …) or use a kernel plan",
            )),
            _ if kernel.accumulator == Accumulator::Bf16 => Err(bad(
                "GPU CUDA-core kernels accumulate in f32 or f16, not bf16",
            )),
            _ => Ok(GpuDot::CudaCore(Gemm { kernel })),
        }
    }

    /// How the kernel reads an operand value. cuBLAS's tf32 kernels on the H100 round f32 to
    /// tf32 to nearest even (fitted on the committed atlas: truncation and round-half-away both
    /// disagree with the records where they differ).
    pub fn operand(&self, x: f32) -> f32 {
        match self {
            GpuDot::TensorCore { tf32: true, .. } => round_tf32(x),
            _ => x,
        }
    }

    /// Σ a[i]·b[i], operands already as the kernel reads them ([`GpuDot::operand`]).
    pub fn dot(&self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            GpuDot::CudaCore(gemm) => gemm.dot(a, b),
            GpuDot::TensorCore { block, split_k, .. } => {
                if *split_k <= 1 {
                    return block.chain(a, b);
                }
                let len = a.len().div_ceil(*split_k).div_ceil(block.group) * block.group;
                // The reduction runs in the accumulator's type: f16 partials are added in f16
                // (cuBLAS's 16F compute type; fitted: the H100's f16-accumulation platform at
                // batch 1 goes from 0 to 196 of 200 probes with it).
                let f16 = block.accumulates_f16();
                a.chunks(len.max(1))
                    .zip(b.chunks(len.max(1)))
                    .fold(0f32, |acc, (x, y)| {
                        let sum = acc + block.chain(x, y);
                        if f16 {
                            round_f16(sum)
                        } else {
                            sum
                        }
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(s: &str) -> KernelOptions {
        s.parse().unwrap()
    }

    #[test]
    fn split_k_slices_are_whole_blocks_summed_in_f32() {
        let d = GpuDot::new(
            Arch::Sm90,
            NumericFormat::Tf32,
            kernel("acc-f32.tc8.sk2.fma"),
        )
        .unwrap();
        // K = 20 in 2 slices: 16 (two blocks of 8) and 4.
        let a: Vec<f32> = (0..20).map(|i| i as f32).collect();
        let b = vec![1f32; 20];
        assert_eq!(d.dot(&a, &b), 190.0);
        // Three 2^-25 after a 1.0: in one chain the last block truncates 1 + 3·2^-25 toward zero
        // to 1.0; split in two, the second slice's 3·2^-25 is added to 1.0 in f32 to nearest,
        // which rounds up to 1 + 2^-23.
        let mut a = vec![0f32; 16];
        a[0] = 1.0;
        a[8..11].copy_from_slice(&[2f32.powi(-25); 3]);
        let b = vec![1f32; 16];
        let one = GpuDot::new(
            Arch::Sm90,
            NumericFormat::Tf32,
            kernel("acc-f32.tc8.sk1.fma"),
        )
        .unwrap()
        .dot(&a, &b);
        assert_eq!(one, 1.0);
        assert_eq!(d.dot(&a, &b), 1.0 + 2f32.powi(-23));
    }

    #[test]
    fn tf32_operands_round_to_nearest_even_only_on_tensor_cores() {
        let x = 1.0 + 2f32.powi(-11) + 2f32.powi(-23); // just above a tf32 midpoint
        let tc = GpuDot::new(
            Arch::Sm90,
            NumericFormat::Tf32,
            kernel("acc-f32.tc8.sk1.fma"),
        )
        .unwrap();
        let cuda = GpuDot::new(
            Arch::Sm90,
            NumericFormat::Tf32,
            kernel("acc-f32.seq.sk1.fma"),
        )
        .unwrap();
        assert_eq!(tc.operand(x), 1.0 + 2f32.powi(-10));
        assert_eq!(cuda.operand(x), x);
    }

    #[test]
    fn library_order_and_bf16_cuda_cores_are_refused_with_a_reason() {
        let e = GpuDot::new(Arch::Sm90, NumericFormat::F16, kernel("acc-f32"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("kernel plan"), "{e}");
        let e = GpuDot::new(
            Arch::Sm90,
            NumericFormat::Bf16,
            kernel("acc-bf16.seq.sk1.fma"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not bf16"), "{e}");
    }
}
