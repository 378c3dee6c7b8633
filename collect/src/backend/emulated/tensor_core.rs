//! NVIDIA tensor-core arithmetic on the CPU, bit for bit: the "block FMA" that the published
//! models agree on (Fasi et al. 2021; Khattak & Mikaitis 2025; Hawkeye 2026; MMA-Sim 2025 — see
//! shared/research/gpu-tensor-core-numerics.md). For one output element and one block of G
//! products plus the incoming accumulator c:
//!
//! 1. products are exact and unnormalised (exponent e_a + e_b, significand in [1, 4));
//! 2. c is one more term of the block, not added afterwards;
//! 3. every term is aligned to the largest exponent E (at least the architecture's floor) on the
//!    grid 2^(E − W) by truncation of its magnitude toward zero (no guard, round or sticky bit);
//! 4. the aligned integers are summed exactly;
//! 5. the sum is normalised once: toward zero to f32, or to nearest-even for an f16 accumulator,
//!    and becomes c of the next block. On Hopper an f16 accumulator is rounded from the sum
//!    already truncated to f32's 24 bits (fitted on the committed H100 records: 195 of 200
//!    probes at batch 8 against 193 rounding the exact sum; no published model says which).
//!
//! W (fractional bits) and the floor are the architecture's; the block size G is a kernel option
//! (`tcG`): the instruction a kernel uses decides it. Integer arithmetic throughout: nothing here
//! depends on the host's floating-point unit.

use std::fmt;
use std::str::FromStr;

use hspi_datasets::{Accumulator, NumericFormat};

use crate::error::{CollectError, Result};

/// The tensor-core generation whose rule applies, named by its SM version (`emu-sm90`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// Ampere (A100, A30) and Ada: 24 fractional bits, exponent floor −132.
    Sm80,
    /// Hopper (H100, H200): 25 fractional bits, exponent floor −133.
    Sm90,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::Sm80, Arch::Sm90];

    /// Fractional bits kept below the block's largest exponent.
    pub fn frac_bits(self) -> i32 {
        match self {
            Arch::Sm80 => 24,
            Arch::Sm90 => 25,
        }
    }

    /// The smallest exponent a block aligns to.
    pub fn exponent_floor(self) -> i32 {
        match self {
            Arch::Sm80 => -132,
            Arch::Sm90 => -133,
        }
    }

    /// The block size of the architecture's own MMA instruction for `format` inputs
    /// (m16n8k16 on Hopper: one block of 16; Ampere splits k16 into 8 + 8; tf32 k8 as 8, or 4 + 4).
    pub fn native_group(self, format: NumericFormat) -> u32 {
        match (self, format) {
            (Arch::Sm90, NumericFormat::Tf32) => 8,
            (Arch::Sm90, _) => 16,
            (Arch::Sm80, NumericFormat::Tf32) => 4,
            (Arch::Sm80, _) => 8,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Arch::Sm80 => "sm80",
            Arch::Sm90 => "sm90",
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Arch {
    type Err = CollectError;
    fn from_str(s: &str) -> Result<Arch> {
        Arch::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| CollectError::UnknownRule(s.into()))
    }
}

/// How a block's exact sum becomes the next accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// f32, truncated toward zero.
    F32TowardZero,
    /// f16, rounded to nearest even.
    F16Nearest,
    /// f16, rounded to nearest even from the sum truncated toward zero to 24 bits (Hopper).
    F16NearestOfF32,
}

/// The largest block accepted: tensor-core instructions sum at most 32 products (fp8 on Hopper).
const MAX_GROUP: usize = 64;

/// One architecture's block FMA for one accumulator type, with a block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockFma {
    pub group: usize,
    frac_bits: i32,
    floor: i32,
    output: Output,
    /// The smallest normal exponent of the operands' format: a subnormal operand keeps its
    /// unnormalised significand at this exponent.
    operand_emin: i32,
}

/// mag · 2^grid rounded once to nearest-even f16 (`half`'s f64 conversion goes through f32 and
/// would round twice).
fn nearest_f16(mag: u64, grid: i32) -> f32 {
    let lead = grid + 63 - mag.leading_zeros() as i32;
    // f16 keeps 11 significant bits, none below 2^-24.
    let quantum = (lead - 10).max(-24);
    let kept = if quantum <= grid {
        (mag as f64) * 2f64.powi(grid)
    } else {
        let shift = (quantum - grid) as u32;
        let (mut q, rem) = if shift >= 64 {
            (0, mag)
        } else {
            (mag >> shift, mag & ((1u64 << shift) - 1))
        };
        // Below half the quantum (shift > 64) nothing rounds up.
        let half = if shift > 64 {
            u64::MAX
        } else {
            1u64 << (shift - 1)
        };
        if rem > half || (rem == half && q & 1 == 1) {
            q += 1;
        }
        q as f64 * 2f64.powi(quantum)
    };
    if kept > 65504.0 {
        f32::INFINITY
    } else {
        kept as f32
    }
}

/// An operand or accumulator as sign, integer significand and the exponent of its unit bit:
/// value = sig · 2^(unit − 23).
#[derive(Debug, Clone, Copy)]
struct Term {
    negative: bool,
    sig: u64,
    /// Exponent of the significand's unit (bit 23) as stored in f32.
    unit: i32,
    /// The exponent the block aligns by: `unit`, raised to the format's smallest normal exponent
    /// for a subnormal of that format.
    align: i32,
}

fn decode(x: f32, emin: i32) -> Option<Term> {
    if x == 0.0 {
        return None;
    }
    let bits = x.to_bits();
    let field = ((bits >> 23) & 0xff) as i32;
    let (sig, unit) = if field == 0 {
        ((bits & 0x7f_ffff) as u64, -126)
    } else {
        (((bits & 0x7f_ffff) | 0x80_0000) as u64, field - 127)
    };
    Some(Term {
        negative: bits >> 31 == 1,
        sig,
        unit,
        align: unit.max(emin),
    })
}

/// Shift a magnitude by `shift` bits (left when positive), truncating toward zero.
fn shifted(mag: u64, shift: i32) -> i64 {
    let v = if shift >= 0 {
        mag << shift.min(63)
    } else if shift <= -64 {
        0
    } else {
        mag >> -shift
    };
    v as i64
}

impl BlockFma {
    /// The block FMA of `arch` for `format` operands accumulating in `accumulator`, with blocks
    /// of `group` products.
    pub fn new(
        arch: Arch,
        format: NumericFormat,
        accumulator: Accumulator,
        group: u32,
    ) -> Result<BlockFma> {
        let bad = |reason: String| CollectError::Kernel {
            kernel: format!("{arch} {format} tc{group} acc-{accumulator}"),
            reason,
        };
        let operand_emin = match format {
            NumericFormat::F16 => -14,
            NumericFormat::Bf16 | NumericFormat::Tf32 => -126,
            other => {
                return Err(bad(format!(
                    "the {arch} tensor-core rule takes f16, bf16 or tf32 operands, not {other}"
                )))
            }
        };
        let output = match (accumulator, format) {
            (Accumulator::F32, _) => Output::F32TowardZero,
            (Accumulator::F16, NumericFormat::F16) if arch == Arch::Sm90 => Output::F16NearestOfF32,
            (Accumulator::F16, NumericFormat::F16) => Output::F16Nearest,
            (acc, f) => {
                return Err(bad(format!(
                    "tensor cores accumulate {f} in f32 (or f16 for f16 operands), not acc-{acc}"
                )))
            }
        };
        if group == 0 || group > MAX_GROUP as u32 {
            return Err(bad(format!(
                "a tensor-core block holds 1 to {MAX_GROUP} products, not {group}"
            )));
        }
        Ok(BlockFma {
            group: group as usize,
            frac_bits: arch.frac_bits(),
            floor: arch.exponent_floor(),
            output,
            operand_emin,
        })
    }

    fn accumulator_emin(&self) -> i32 {
        match self.output {
            Output::F32TowardZero => -126,
            Output::F16Nearest | Output::F16NearestOfF32 => -14,
        }
    }

    /// Whether blocks write an f16 accumulator.
    pub fn accumulates_f16(&self) -> bool {
        matches!(self.output, Output::F16Nearest | Output::F16NearestOfF32)
    }

    /// c + Σ a[i]·b[i] for one block (a.len() ≤ group), as the tensor core rounds it.
    pub fn block(&self, c: f32, a: &[f32], b: &[f32]) -> f32 {
        if !c.is_finite() {
            // An overflowed accumulator stays infinite (measured on Ada; see the research notes).
            return c;
        }
        // First pass: the block's largest exponent (products by their unnormalised exponent).
        let (a, b) = (&a[..a.len().min(self.group)], &b[..b.len().min(self.group)]);
        let mut top = self.floor;
        let mut any = false;
        for (x, y) in a.iter().zip(b) {
            if let (Some(p), Some(q)) =
                (decode(*x, self.operand_emin), decode(*y, self.operand_emin))
            {
                top = top.max(p.align + q.align);
                any = true;
            }
        }
        let acc = decode(c, self.accumulator_emin());
        if let Some(t) = acc {
            top = top.max(t.align);
        }
        if !any && acc.is_none() {
            return 0.0;
        }
        // Second pass: each term's magnitude on the grid 2^(top − W), truncated toward zero,
        // summed exactly. A product's significands (≤ 48 bits) sit at 2^(ua + ub − 46).
        let grid = top - self.frac_bits;
        let mut sum: i64 = 0;
        for (x, y) in a.iter().zip(b) {
            if let (Some(p), Some(q)) =
                (decode(*x, self.operand_emin), decode(*y, self.operand_emin))
            {
                let v = shifted(p.sig * q.sig, p.unit + q.unit - 46 - grid);
                sum += if p.negative != q.negative { -v } else { v };
            }
        }
        if let Some(t) = acc {
            let v = shifted(t.sig, t.unit - 23 - grid);
            sum += if t.negative { -v } else { v };
        }
        self.normalise(sum, grid)
    }

    /// sum · 2^grid, rounded as the architecture writes its accumulator.
    fn normalise(&self, sum: i64, grid: i32) -> f32 {
        if sum == 0 {
            return 0.0;
        }
        let negative = sum < 0;
        let mag = sum.unsigned_abs();
        let toward_zero_f32 = || {
            let lead = grid + 63 - mag.leading_zeros() as i32;
            if lead > 127 {
                f32::INFINITY
            } else {
                // Keep the bits at or above the f32 quantum of the leading bit.
                let quantum = (lead - 23).max(-149);
                let kept = if quantum > grid {
                    mag >> (quantum - grid)
                } else {
                    mag << (grid - quantum)
                };
                (kept as f64 * 2f64.powi(quantum)) as f32
            }
        };
        let value = match self.output {
            Output::F32TowardZero => toward_zero_f32(),
            Output::F16Nearest => nearest_f16(mag, grid),
            Output::F16NearestOfF32 => half::f16::from_f32(toward_zero_f32()).to_f32(),
        };
        if negative {
            -value
        } else {
            value
        }
    }

    /// Σ a[i]·b[i] from a zero accumulator, K walked in ascending blocks of `group`.
    pub fn chain(&self, a: &[f32], b: &[f32]) -> f32 {
        a.chunks(self.group)
            .zip(b.chunks(self.group))
            .fold(0.0, |c, (x, y)| self.block(c, x, y))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm90_f32(group: u32, format: NumericFormat) -> BlockFma {
        BlockFma::new(Arch::Sm90, format, Accumulator::F32, group).unwrap()
    }

    #[test]
    fn exact_sums_come_out_exact() {
        let t = sm90_f32(16, NumericFormat::F16);
        let a: Vec<f32> = (1..=16).map(|i| i as f32).collect();
        let b = vec![0.5f32; 16];
        assert_eq!(t.block(0.0, &a, &b), 68.0);
        assert_eq!(t.block(2.0, &a, &b), 70.0);
        assert_eq!(t.block(0.0, &[0.0; 4], &[1.0; 4]), 0.0);
    }

    #[test]
    fn small_terms_survive_on_the_blocks_grid_and_its_width_is_the_architectures() {
        // 1 + 4·2^-25: each 2^-25 lies on Hopper's grid (25 fractional bits) and the four sum to
        // 2^-23, which f32 keeps; Ampere's grid (24 bits) truncates each to zero; an f32 FMA
        // chain (round to nearest even) loses them one by one.
        let a = [
            1.0,
            2f32.powi(-25),
            2f32.powi(-25),
            2f32.powi(-25),
            2f32.powi(-25),
        ];
        let b = [1.0; 5];
        let hopper = sm90_f32(16, NumericFormat::Bf16).block(0.0, &a, &b);
        let ampere = BlockFma::new(Arch::Sm80, NumericFormat::Bf16, Accumulator::F32, 8).unwrap();
        assert_eq!(hopper, 1.0 + 2f32.powi(-23));
        assert_eq!(ampere.block(0.0, &a, &b), 1.0);
        let chain = a.iter().zip(&b).fold(0f32, |c, (x, y)| x.mul_add(*y, c));
        assert_eq!(chain, 1.0);
    }

    #[test]
    fn negative_terms_truncate_toward_zero_not_down() {
        // 1 − 2^-26 on the 2^-25 grid: the negative term truncates to 0 (toward zero), so the
        // block returns 1.0; flooring toward −∞ would give 1 − 2^-25, written as 0.99999994.
        let t = sm90_f32(16, NumericFormat::Bf16);
        assert_eq!(t.block(0.0, &[1.0, -(2f32.powi(-26))], &[1.0, 1.0]), 1.0);
        // The block's sum is truncated toward zero too: 1 + 2^-24 + 2^-25 → 1.0 (nearest: 1 + 2^-23).
        let r = t.block(
            0.0,
            &[1.0, 2f32.powi(-24), 2f32.powi(-25)],
            &[1.0, 1.0, 1.0],
        );
        assert_eq!(r, 1.0);
        let r = t.block(
            0.0,
            &[-1.0, -(2f32.powi(-24)), -(2f32.powi(-25))],
            &[1.0, 1.0, 1.0],
        );
        assert_eq!(r, -1.0);
    }

    #[test]
    fn block_size_changes_the_bits() {
        // 1024 − 1024 and fourteen 2^-20: in one block of 16 the small terms are aligned to 2^10
        // and vanish; in blocks of 8 the second block aligns to 2^-20 and keeps all eight.
        let mut a = vec![2f32.powi(-20); 16];
        a[0] = 1024.0;
        a[1] = -1024.0;
        let b = vec![1f32; 16];
        assert_eq!(sm90_f32(16, NumericFormat::F16).chain(&a, &b), 0.0);
        assert_eq!(
            sm90_f32(8, NumericFormat::F16).chain(&a, &b),
            2f32.powi(-17)
        );
    }

    #[test]
    fn f16_accumulation_rounds_to_nearest_even_each_block() {
        let t = BlockFma::new(Arch::Sm90, NumericFormat::F16, Accumulator::F16, 16).unwrap();
        // 2048 + 1 is a tie on f16's grid at 2048 (spacing 2): nearest even keeps 2048;
        // 2048 + 3 → 2052 (tie to even), where truncation would give 2050.
        assert_eq!(t.block(0.0, &[2048.0, 1.0], &[1.0, 1.0]), 2048.0);
        assert_eq!(t.block(0.0, &[2048.0, 3.0], &[1.0, 1.0]), 2052.0);
        let f32acc = sm90_f32(16, NumericFormat::F16);
        assert_eq!(f32acc.block(0.0, &[2048.0, 3.0], &[1.0, 1.0]), 2051.0);
    }

    #[test]
    fn hopper_rounds_f16_from_the_sum_truncated_to_24_bits() {
        // 2048 + 1 + 2^-13 lies above the tie 2049 on f16's grid, so nearest gives 2050; its
        // 2^-13 is below f32's 24 bits at 2049 (quantum 2^-12), so Hopper sees the tie and keeps
        // the even 2048.
        let (a, b) = ([2048.0, 1.0, 2f32.powi(-13)], [1f32; 3]);
        let hopper = BlockFma::new(Arch::Sm90, NumericFormat::F16, Accumulator::F16, 16).unwrap();
        let ampere = BlockFma::new(Arch::Sm80, NumericFormat::F16, Accumulator::F16, 8).unwrap();
        assert_eq!(hopper.block(0.0, &a, &b), 2048.0);
        assert_eq!(ampere.block(0.0, &a, &b), 2050.0);
    }

    #[test]
    fn unsupported_operands_and_accumulators_are_named() {
        let e = BlockFma::new(Arch::Sm90, NumericFormat::F32, Accumulator::F32, 16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("f16, bf16 or tf32"), "{e}");
        let e = BlockFma::new(Arch::Sm90, NumericFormat::Bf16, Accumulator::F16, 16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("acc-f16"), "{e}");
        assert_eq!("sm90".parse::<Arch>().unwrap(), Arch::Sm90);
        let e = "sm70".parse::<Arch>().unwrap_err().to_string();
        assert!(e.contains("sm80, sm90"), "{e}");
    }

    #[test]
    fn matches_an_f64_reference_where_nothing_is_lost() {
        // Products of small integers at similar scales: every aligned term is exact.
        let t = sm90_f32(16, NumericFormat::Bf16);
        let a: Vec<f32> = (0..64).map(|i| ((i * 37) % 19) as f32 - 9.0).collect();
        let b: Vec<f32> = (0..64).map(|i| ((i * 11) % 7) as f32 - 3.0).collect();
        let exact: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
        assert_eq!(t.chain(&a, &b) as f64, exact);
    }
}
