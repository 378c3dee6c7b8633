//! A fresh random subset of the pool per audit, so a provider cannot special-case a handful of
//! public prompts: it would have to answer every pool prompt specially.

use hspi_datasets::ProbeSet;
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

use crate::error::PackError;

/// Which pool prompts one audit asks, and the seed that drew them (to reproduce the draw).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draw {
    pub seed: u64,
    pub pool: usize,
    /// The drawn prompts, in the pool's order.
    pub probes: ProbeSet,
}

/// A seed nobody can predict before the audit: the clock's nanoseconds and the process id.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // splitmix64 of the two: nearby clocks give unrelated seeds.
    let mut z = nanos ^ (u64::from(std::process::id()) << 32);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `count` prompts of `pool` drawn without replacement with `seed`.
pub fn draw(pool: &ProbeSet, count: usize, seed: u64) -> Result<Draw, PackError> {
    let n = pool.probes.len();
    if count == 0 || count > n {
        return Err(PackError::Draw {
            pool: n,
            asked: count,
        });
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut picked = sample(&mut rng, n, count).into_vec();
    picked.sort_unstable();
    Ok(Draw {
        seed,
        pool: n,
        probes: ProbeSet {
            generator: format!("{} (audit draw)", pool.generator),
            seed: pool.seed,
            probes: picked.iter().map(|&i| pool.probes[i].clone()).collect(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hspi_datasets::{GenerationParams, Probe, ProbeInput, ProbeProvenance};

    fn pool(n: usize) -> ProbeSet {
        let probes = (0..n)
            .map(|i| {
                Probe::new(
                    ProbeInput::Prompt {
                        text: format!("prompt {i}"),
                        params: GenerationParams {
                            max_tokens: 8,
                            temperature: 0.0,
                            top_logprobs: 5,
                            seed: None,
                        },
                    },
                    ProbeProvenance {
                        generator: "test".into(),
                        seed: 0,
                        index: i as u64,
                    },
                )
            })
            .collect();
        ProbeSet {
            generator: "test".into(),
            seed: 0,
            probes,
        }
    }

    #[test]
    fn a_seed_repeats_its_draw_and_two_fresh_seeds_draw_differently() {
        let p = pool(100);
        let ids = |d: &Draw| {
            d.probes
                .probes
                .iter()
                .map(|p| p.id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(&draw(&p, 16, 7).unwrap()),
            ids(&draw(&p, 16, 7).unwrap())
        );
        let (a, b) = (fresh_seed(), fresh_seed());
        assert_ne!(a, b);
        assert_ne!(
            ids(&draw(&p, 16, a).unwrap()),
            ids(&draw(&p, 16, b).unwrap())
        );
        assert_eq!(draw(&p, 16, 1).unwrap().probes.probes.len(), 16);
        assert!(draw(&p, 101, 1).unwrap_err().to_string().contains("100"));
    }
}
