//! Seeded random probes: 8-bit image levels (what a camera or a PNG gives) and token sequences.

use hspi_datasets::{ProbeInput, ProbeSet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// `count` images of `shape` = [channels, height, width] with pixels on the 8-bit grid k/255.
pub fn random_images(seed: u64, count: usize, shape: [usize; 3]) -> ProbeSet {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let n = shape.iter().product::<usize>();
    let inputs: Vec<ProbeInput> = (0..count)
        .map(|_| ProbeInput::Image {
            shape: shape.to_vec(),
            pixels: (0..n).map(|_| rng.random::<u8>() as f32 / 255.0).collect(),
        })
        .collect();
    crate::seeded_set("random-u8-image", seed, inputs)
}

/// `count` token sequences of length `len` drawn uniformly from `0..vocab`.
pub fn random_tokens(seed: u64, count: usize, vocab: u32, len: usize) -> ProbeSet {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let inputs: Vec<ProbeInput> = (0..count)
        .map(|_| ProbeInput::Tokens {
            ids: (0..len).map(|_| rng.random_range(0..vocab)).collect(),
        })
        .collect();
    crate::seeded_set("random-tokens", seed, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bits_other_seed_other_probes() {
        let a = random_images(42, 10, [1, 8, 8]);
        let b = random_images(42, 10, [1, 8, 8]);
        let c = random_images(43, 10, [1, 8, 8]);
        assert_eq!(a, b);
        assert_eq!(a.hash(), b.hash());
        assert_ne!(a.hash(), c.hash());
        let ids: std::collections::HashSet<_> = a.probes.iter().map(|p| &p.id).collect();
        assert_eq!(ids.len(), 10, "probe ids are distinct");
    }

    #[test]
    fn pixels_sit_on_the_8bit_grid() {
        let set = random_images(1, 3, [1, 8, 8]);
        for p in &set.probes {
            let ProbeInput::Image { pixels, .. } = &p.input else {
                panic!()
            };
            for v in pixels {
                assert!((0.0..=1.0).contains(v));
                assert_eq!((v * 255.0).round() / 255.0, *v);
            }
        }
    }

    #[test]
    fn tokens_in_vocab() {
        let set = random_tokens(5, 4, 100, 12);
        for p in &set.probes {
            let ProbeInput::Tokens { ids } = &p.input else {
                panic!()
            };
            assert_eq!(ids.len(), 12);
            assert!(ids.iter().all(|i| *i < 100));
        }
    }
}
