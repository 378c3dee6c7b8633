//! Seeded prompt sets for endpoints: short English continuations composed from a fixed word list,
//! with pinned generation parameters (temperature 0, a seed, top-k logprobs).

use hspi_datasets::{GenerationParams, ProbeInput, ProbeSet};
use rand::seq::IndexedRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Plain lowercase words (every character is in the tiny LM's vocabulary, checked by a test there).
const WORDS: &[&str] = &[
    "the",
    "land",
    "of",
    "water",
    "and",
    "light",
    "came",
    "upon",
    "a",
    "man",
    "who",
    "went",
    "into",
    "city",
    "house",
    "great",
    "river",
    "mountain",
    "morning",
    "evening",
    "bread",
    "wine",
    "gold",
    "silver",
    "king",
    "people",
    "field",
    "stone",
    "fire",
    "voice",
    "heard",
    "saw",
    "spake",
    "said",
    "unto",
    "them",
    "his",
    "her",
    "their",
    "children",
    "sons",
    "daughters",
    "years",
    "days",
    "night",
    "sea",
    "earth",
    "heaven",
    "first",
    "last",
    "seven",
    "twelve",
    "hundred",
    "thousand",
    "went",
    "forth",
    "before",
    "after",
    "under",
    "above",
    "with",
    "without",
    "between",
    "among",
    "good",
    "evil",
    "old",
    "new",
    "long",
    "small",
    "many",
    "few",
    "all",
    "every",
    "north",
    "south",
    "east",
    "west",
    "gate",
    "wall",
    "tree",
    "fruit",
    "seed",
    "flock",
    "shepherd",
    "servant",
    "master",
    "brother",
    "sister",
    "father",
    "mother",
    "name",
    "word",
    "law",
    "book",
];

const STARTS: &[&str] = &["And", "Then", "Now", "So", "In", "When", "Behold"];

pub fn prompts(seed: u64, count: usize, max_tokens: u32, top_logprobs: u32) -> ProbeSet {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let inputs: Vec<ProbeInput> = (0..count)
        .map(|index| {
            let mut text = STARTS
                .choose(&mut rng)
                .copied()
                .unwrap_or("And")
                .to_string();
            for _ in 0..4 + index % 6 {
                text.push(' ');
                text.push_str(WORDS.choose(&mut rng).copied().unwrap_or("the"));
            }
            ProbeInput::Prompt {
                text,
                params: GenerationParams {
                    max_tokens,
                    temperature: 0.0,
                    top_logprobs,
                    seed: Some(seed),
                },
            }
        })
        .collect();
    crate::seeded_set("prompts-wordlist", seed, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_sets_are_reproducible_and_distinct() {
        let a = prompts(3, 20, 8, 5);
        assert_eq!(a, prompts(3, 20, 8, 5));
        let ids: std::collections::HashSet<_> = a.probes.iter().map(|p| &p.id).collect();
        assert_eq!(ids.len(), 20);
        let ProbeInput::Prompt { params, .. } = &a.probes[0].input else {
            panic!()
        };
        assert_eq!(
            (params.max_tokens, params.top_logprobs, params.temperature),
            (8, 5, 0.0)
        );
    }
}
