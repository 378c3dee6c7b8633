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

/// Generation pinned: temperature 0, the set's seed, top-k logprobs.
fn pinned(max_tokens: u32, top_logprobs: u32, seed: u64) -> GenerationParams {
    GenerationParams {
        max_tokens,
        temperature: 0.0,
        top_logprobs,
        seed: Some(seed),
    }
}

/// An opening word, then `words(rng)` words of the list (drawn in that order from `rng`).
fn word_prompt(
    rng: &mut ChaCha20Rng,
    words: impl FnOnce(&mut ChaCha20Rng) -> usize,
    params: GenerationParams,
) -> ProbeInput {
    let mut text = STARTS.choose(rng).copied().unwrap_or("And").to_string();
    for _ in 0..words(rng) {
        text.push(' ');
        text.push_str(WORDS.choose(rng).copied().unwrap_or("the"));
    }
    ProbeInput::Prompt { text, params }
}

pub fn prompts(seed: u64, count: usize, max_tokens: u32, top_logprobs: u32) -> ProbeSet {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let inputs: Vec<ProbeInput> = (0..count)
        .map(|index| {
            let params = pinned(max_tokens, top_logprobs, seed);
            word_prompt(&mut rng, |_| 4 + index % 6, params)
        })
        .collect();
    crate::seeded_set("prompts-wordlist", seed, inputs)
}

/// Words per fresh prompt after its opening word (the pool's prompts have at most 9).
const FRESH_WORDS: std::ops::RangeInclusive<usize> = 10..=15;

/// Prompts made for one audit alone (`hspi audit --weights`): word sequences of 10 to 15 words
/// from the same list, from a seed nobody knows before the audit. The space they are drawn from
/// is [`fresh_space`]; the ids of the pack's pool cannot recur (its prompts are shorter).
pub fn fresh_prompts(seed: u64, count: usize, max_tokens: u32, top_logprobs: u32) -> ProbeSet {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let inputs: Vec<ProbeInput> = (0..count)
        .map(|_| {
            let params = pinned(max_tokens, top_logprobs, seed);
            word_prompt(
                &mut rng,
                |rng| rand::Rng::random_range(rng, FRESH_WORDS),
                params,
            )
        })
        .collect();
    crate::seeded_set("prompts-fresh", seed, inputs)
}

/// Prompts made for one audit that make attention read far back: `context` words of the list to
/// remember, then a request to repeat the first of them, so that each answer's tokens attend to
/// keys and values written long before (a quantised KV cache rounds every one of them, and its
/// effect grows with the distance attended over). Drawn as [`fresh_prompts`] are, from a seed
/// nobody knows before the audit.
pub fn recall_prompts(
    seed: u64,
    count: usize,
    context: usize,
    max_tokens: u32,
    top_logprobs: u32,
) -> ProbeSet {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let inputs: Vec<ProbeInput> = (0..count)
        .map(|_| {
            let words: Vec<&str> = (0..context)
                .map(|_| WORDS.choose(&mut rng).copied().unwrap_or("the"))
                .collect();
            ProbeInput::Prompt {
                text: format!(
                    "Remember these words: {}. Now repeat the first ten words, in order:",
                    words.join(" ")
                ),
                params: pinned(max_tokens, top_logprobs, seed),
            }
        })
        .collect();
    crate::seeded_set("prompts-recall", seed, inputs)
}

/// How many distinct prompts [`fresh_prompts`] draws from, as a power of ten (`10^25`).
pub fn fresh_space() -> String {
    let words = WORDS.len() as f64;
    let total: f64 = FRESH_WORDS
        .map(|n| STARTS.len() as f64 * words.powi(n as i32))
        .sum();
    format!("about 10^{:.0}", total.log10().floor())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_prompts_hold_their_context_and_differ_by_seed() {
        let a = recall_prompts(3, 4, 200, 8, 5);
        assert_eq!(a, recall_prompts(3, 4, 200, 8, 5));
        assert_ne!(a, recall_prompts(4, 4, 200, 8, 5));
        for p in &a.probes {
            let ProbeInput::Prompt { text, .. } = &p.input else {
                panic!("a prompt: {p:?}");
            };
            let list = text
                .strip_prefix("Remember these words: ")
                .and_then(|t| t.split_once(". Now repeat"))
                .expect("the context, then the request");
            assert_eq!(list.0.split(' ').count(), 200, "{text}");
        }
    }

    #[test]
    fn fresh_prompts_differ_by_seed_and_are_longer_than_the_pool() {
        let a = fresh_prompts(11, 16, 8, 5);
        assert_eq!(a, fresh_prompts(11, 16, 8, 5));
        let b = fresh_prompts(12, 16, 8, 5);
        let ids: std::collections::HashSet<_> = a.probes.iter().map(|p| &p.id).collect();
        assert!(b.probes.iter().all(|p| !ids.contains(&p.id)));
        let pool = prompts(1, 108, 8, 5);
        let words = |s: &ProbeSet| -> Vec<usize> {
            s.probes
                .iter()
                .map(|p| match &p.input {
                    ProbeInput::Prompt { text, .. } => text.split(' ').count(),
                    _ => 0,
                })
                .collect()
        };
        assert!(words(&a).iter().all(|n| *n >= 11));
        assert!(words(&pool).iter().all(|n| *n <= 10));
        let exponent: u32 = fresh_space()
            .trim_start_matches("about 10^")
            .parse()
            .unwrap();
        assert!(exponent >= 25, "{}", fresh_space());
    }

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
