//! Numeric-stress image probes: inputs that expose accumulation order and precision, where random
//! 8-bit images mostly separate formats. Three families, cycled by index:
//! - `saturated`: pixels at 0 or 1 — the largest activations, so the widest exponent spread in sums;
//! - `bf16-midpoint`: pixels exactly halfway between neighbouring bf16 values (ties for bf16/f16
//!   rounding, exact in f32), so every narrowing conversion has to decide;
//! - `near-cancel`: a flat 0.5 field with ±2⁻¹² perturbations, so convolution sums nearly cancel
//!   and the low bits carry the result.

use hspi_datasets::{ProbeInput, ProbeSet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

pub const FAMILIES: [&str; 3] = ["saturated", "bf16-midpoint", "near-cancel"];

/// Halfway between the bf16 value below `v` and the next one up (exact in f32).
fn bf16_midpoint(v: f32) -> f32 {
    let bits = v.to_bits() & 0xffff_0000;
    f32::from_bits(bits | 0x0000_8000)
}

pub fn stress_images(seed: u64, count: usize, shape: [usize; 3]) -> ProbeSet {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let n = shape.iter().product::<usize>();
    let inputs: Vec<ProbeInput> = (0..count)
        .map(|index| {
            let pixels: Vec<f32> = match index % FAMILIES.len() {
                0 => (0..n)
                    .map(|_| if rng.random::<bool>() { 1.0 } else { 0.0 })
                    .collect(),
                1 => (0..n)
                    .map(|_| bf16_midpoint(rng.random_range(0.25f32..0.99)))
                    .collect(),
                _ => (0..n)
                    .map(|_| 0.5 + (rng.random_range(-8i32..=8) as f32) * 2f32.powi(-12))
                    .collect(),
            };
            ProbeInput::Image {
                shape: shape.to_vec(),
                pixels,
            }
        })
        .collect();
    crate::seeded_set("stress-image", seed, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midpoints_are_bf16_ties_and_exact_in_f32() {
        for v in [0.3f32, 0.5, 0.77, 0.98] {
            let m = bf16_midpoint(v);
            let lo = f32::from_bits(m.to_bits() & 0xffff_0000);
            let hi = f32::from_bits((m.to_bits() & 0xffff_0000) + 0x1_0000);
            assert_eq!(m - lo, hi - m, "{v}: {m} is halfway");
        }
    }

    #[test]
    fn families_cycle_and_stay_in_range() {
        let set = stress_images(9, 6, [1, 8, 8]);
        assert_eq!(set, stress_images(9, 6, [1, 8, 8]));
        for (i, p) in set.probes.iter().enumerate() {
            let ProbeInput::Image { pixels, .. } = &p.input else {
                panic!()
            };
            assert!(pixels.iter().all(|v| (0.0..=1.0).contains(v)));
            if i % 3 == 0 {
                assert!(pixels.iter().all(|v| *v == 0.0 || *v == 1.0));
            }
        }
    }
}
