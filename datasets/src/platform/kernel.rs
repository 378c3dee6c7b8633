//! The kernel dimension: accumulator, reduction order, split-K and FMA of the matrix products.

use std::fmt;
use std::str::FromStr;

use super::dimension::Dimension;
use super::error::FieldError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Accumulator {
    F32,
    F16,
    Bf16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReductionOrder {
    Sequential,
    Pairwise,
    Blocked {
        tile: u32,
    },
    /// The library picks order, split-K and FMA itself (cuBLAS heuristics, which vary with the
    /// GPU and the problem shape); only the accumulator type is asked for.
    Library,
    /// NVIDIA tensor cores: K walked in ascending order in blocks of `group` products, each
    /// block summed with the accumulator as one block FMA (exact products aligned to the largest
    /// exponent by truncation, the architecture's rounding after the block). `tcG`.
    TensorCore {
        group: u32,
    },
    /// A CUDA-core dot split over `lanes` threads: lane j chains FMAs over `vector` contiguous
    /// elements at j·vector, then every lanes·vector further; the lanes' partials are summed by a
    /// butterfly (warp-shuffle) tree, lane j taking lane j + half. `lnLxV`.
    Lanes {
        lanes: u32,
        vector: u32,
    },
    /// K cut into vectors of `vector` elements dealt round-robin to `slices` accumulators (as
    /// lanes are), each chaining FMAs from zero; the partials are then added in slice order, as
    /// a thread block adds its warps' partial sums through shared memory (the H100's f32 SGEMM
    /// for fc2 at m = 8: `il16x1`). `ilSxV`.
    Interleaved {
        slices: u32,
        vector: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelOptions {
    pub accumulator: Accumulator,
    pub order: ReductionOrder,
    pub split_k: u32,
    pub fma: bool,
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions {
            accumulator: Accumulator::F32,
            order: ReductionOrder::Sequential,
            split_k: 1,
            fma: true,
        }
    }
}

impl fmt::Display for Accumulator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Accumulator::F32 => "f32",
            Accumulator::F16 => "f16",
            Accumulator::Bf16 => "bf16",
        })
    }
}

impl fmt::Display for ReductionOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReductionOrder::Sequential => f.write_str("seq"),
            ReductionOrder::Pairwise => f.write_str("pair"),
            ReductionOrder::Blocked { tile } => write!(f, "blk{tile}"),
            ReductionOrder::Library => f.write_str("lib"),
            ReductionOrder::TensorCore { group } => write!(f, "tc{group}"),
            ReductionOrder::Lanes { lanes, vector } => write!(f, "ln{lanes}x{vector}"),
            ReductionOrder::Interleaved { slices, vector } => write!(f, "il{slices}x{vector}"),
        }
    }
}

impl fmt::Display for KernelOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.order == ReductionOrder::Library {
            return write!(f, "acc-{}", self.accumulator);
        }
        write!(
            f,
            "acc-{}.{}.sk{}.{}",
            self.accumulator,
            self.order,
            self.split_k,
            if self.fma { "fma" } else { "nofma" }
        )
    }
}

/// `seq`, `pair`, `blkK`, `tcG`, `lnLxV` or `ilSxV`, every count positive (lanes a power of
/// two: the butterfly halves them).
fn parse_order(s: &str) -> Option<ReductionOrder> {
    let positive = |t: &str| t.parse::<u32>().ok().filter(|n| *n > 0);
    match s {
        "seq" => Some(ReductionOrder::Sequential),
        "pair" => Some(ReductionOrder::Pairwise),
        _ => {
            if let Some(tile) = s.strip_prefix("blk") {
                return positive(tile).map(|tile| ReductionOrder::Blocked { tile });
            }
            if let Some(group) = s.strip_prefix("tc") {
                return positive(group).map(|group| ReductionOrder::TensorCore { group });
            }
            if let Some((slices, vector)) = s.strip_prefix("il").and_then(|t| t.split_once('x')) {
                return Some(ReductionOrder::Interleaved {
                    slices: positive(slices)?,
                    vector: positive(vector)?,
                });
            }
            let (lanes, vector) = s.strip_prefix("ln")?.split_once('x')?;
            let lanes = positive(lanes).filter(|l| l.is_power_of_two())?;
            Some(ReductionOrder::Lanes {
                lanes,
                vector: positive(vector)?,
            })
        }
    }
}

impl FromStr for KernelOptions {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, FieldError> {
        let bad = |what: &str| {
            FieldError::new(
                Dimension::Kernel,
                format!("kernel options '{s}': {what} (expected acc-f32.blk32.sk2.fma)"),
            )
        };
        let accumulator = |acc: &str| match acc.strip_prefix("acc-") {
            Some("f32") => Ok(Accumulator::F32),
            Some("f16") => Ok(Accumulator::F16),
            Some("bf16") => Ok(Accumulator::Bf16),
            _ => Err(bad("accumulator must be acc-f32, acc-f16 or acc-bf16")),
        };
        let parts: Vec<&str> = s.split('.').collect();
        let [acc, order, sk, fma] = parts.as_slice() else {
            // The short form: the accumulator alone, the rest chosen by the library.
            if let [acc] = parts.as_slice() {
                return Ok(KernelOptions {
                    accumulator: accumulator(acc)?,
                    order: ReductionOrder::Library,
                    split_k: 1,
                    fma: true,
                });
            }
            return Err(bad("expected acc-X alone or four parts separated by '.'"));
        };
        let accumulator = accumulator(acc)?;
        let order = parse_order(order)
            .ok_or_else(|| bad("reduction order must be seq, pair, blkK, tcG, lnLxV or ilSxV"))?;
        let split_k = sk
            .strip_prefix("sk")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| bad("split-K must be skN with N ≥ 1"))?;
        let fma = match *fma {
            "fma" => true,
            "nofma" => false,
            _ => return Err(bad("last part must be fma or nofma")),
        };
        Ok(KernelOptions {
            accumulator,
            order,
            split_k,
            fma,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_options_round_trip() {
        for s in [
            "acc-f32.seq.sk1.fma",
            "acc-f32.tc16.sk1.fma",
            "acc-f32.tc8.sk2.fma",
            "acc-f16.tc16.sk1.fma",
            "acc-f32.ln16x4.sk1.fma",
            "acc-f32.ln32x1.sk4.nofma",
            "acc-f32.il16x1.sk1.fma",
            "acc-f32.il3x4.sk2.nofma",
            "acc-bf16.blk64.sk8.fma",
            "acc-f16",
        ] {
            let k: KernelOptions = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(k.to_string(), s);
        }
    }

    #[test]
    fn bad_orders_are_named() {
        for s in [
            "acc-f32.tc0.sk1.fma",
            "acc-f32.ln12x4.sk1.fma",
            "acc-f32.ln16.sk1.fma",
            "acc-f32.ln16x0.sk1.fma",
            "acc-f32.tcx.sk1.fma",
            "acc-f32.il0x4.sk1.fma",
            "acc-f32.il16.sk1.fma",
        ] {
            let e = s.parse::<KernelOptions>().unwrap_err().to_string();
            assert!(e.contains("tcG, lnLxV or ilSxV"), "{s}: {e}");
        }
    }
}
