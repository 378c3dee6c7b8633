//! The kernel dimension: accumulator, reduction order, split-K and FMA of the matrix products.

use std::fmt;
use std::str::FromStr;

use super::error::FieldError;
use super::pattern::Dimension;

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
        let order = match *order {
            "seq" => ReductionOrder::Sequential,
            "pair" => ReductionOrder::Pairwise,
            other => match other
                .strip_prefix("blk")
                .and_then(|t| t.parse::<u32>().ok())
            {
                Some(tile) if tile > 0 => ReductionOrder::Blocked { tile },
                _ => return Err(bad("reduction order must be seq, pair or blkK")),
            },
        };
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
