//! Probe generators. Every generator is a pure function of its seed: same seed, same bits.

pub mod border;
pub mod border_prompts;
mod divergence;
mod error;
mod file;
mod for_model;
pub mod minimize;
pub mod near_tie;
mod prompts;
mod random;
mod stress;

pub use divergence::{divergent_prompts, Divergence};
pub use error::ProbeError;
pub use file::{read_probe_set, save_probe_set, write_probe_set};
pub use for_model::{for_model, prompts_for, random_for, stress_for, union_of};
pub use prompts::{fresh_prompts, fresh_space, prompts, recall_prompts};
pub use random::{random_images, random_tokens};
pub use stress::stress_images;

use hspi_datasets::{Probe, ProbeInput, ProbeProvenance, ProbeSet};

/// A probe set from a generator's inputs, each probe's provenance naming the generator, seed and index.
pub fn seeded_set(
    generator: &str,
    seed: u64,
    inputs: impl IntoIterator<Item = ProbeInput>,
) -> ProbeSet {
    // Identical inputs are one probe (a probe's id is its content): keep the first.
    let mut seen = std::collections::HashSet::new();
    let probes = inputs
        .into_iter()
        .enumerate()
        .filter(|(_, input)| seen.insert(hspi_datasets::content_id(input)))
        .map(|(index, input)| {
            Probe::new(
                input,
                ProbeProvenance {
                    generator: generator.into(),
                    seed,
                    index: index as u64,
                },
            )
        })
        .collect();
    ProbeSet {
        generator: generator.into(),
        seed,
        probes,
    }
}
