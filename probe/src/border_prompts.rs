//! Border prompts for language models, found white-box: the greedy next token of every candidate
//! prompt at each platform's format, from full next-token logits computed locally (SmolLM2 through
//! candle's quantized llama, prompts tokenised as llama.cpp does). Two platforms are split by a
//! prompt when their greedy tokens differ; a greedy set cover keeps few prompts for all pairs.

use hspi_datasets::top_label;
use std::path::Path;

use hspi_datasets::NumericFormat;

use hspi_collect::zoo::bpe::Bpe;
use hspi_collect::zoo::QuantizedLm;
use hspi_collect::Result;

/// Greedy next token and top-2 logit gap of each prompt at one format.
#[derive(Debug, Clone)]
pub struct GreedyRun {
    pub format: NumericFormat,
    pub tokens: Vec<u32>,
    pub gaps: Vec<f32>,
}

/// Runs every prompt at every format (each model loaded once).
pub fn greedy_runs(
    weights: &Path,
    formats: &[NumericFormat],
    prompts: &[String],
) -> Result<Vec<GreedyRun>> {
    let bpe = Bpe::from_gguf(weights)?;
    let encoded = prompts
        .iter()
        .map(|p| bpe.encode(p))
        .collect::<Result<Vec<_>>>()?;
    formats
        .iter()
        .map(|format| {
            let mut lm = QuantizedLm::load(weights, *format)?;
            let (mut tokens, mut gaps) = (Vec::new(), Vec::new());
            for ids in &encoded {
                let logits = lm.next_token_logits(ids)?;
                tokens.push(top_label(&logits).unwrap_or(0) as u32);
                gaps.push(crate::near_tie::top2_gap(&logits));
            }
            Ok(GreedyRun {
                format: *format,
                tokens,
                gaps,
            })
        })
        .collect()
}

/// For each pair (i < j) of runs, the prompts on which their greedy tokens differ.
pub fn splitting_prompts(runs: &[GreedyRun]) -> Vec<((usize, usize), Vec<usize>)> {
    let mut pairs = Vec::new();
    for i in 0..runs.len() {
        for j in i + 1..runs.len() {
            let split = (0..runs[i].tokens.len())
                .filter(|p| runs[i].tokens[*p] != runs[j].tokens[*p])
                .collect();
            pairs.push(((i, j), split));
        }
    }
    pairs
}

/// Greedy set cover: the prompts, few, that split every pair any prompt splits.
pub fn cover(pairs: &[((usize, usize), Vec<usize>)]) -> Vec<usize> {
    let mut open: Vec<&Vec<usize>> = pairs
        .iter()
        .map(|(_, s)| s)
        .filter(|s| !s.is_empty())
        .collect();
    let mut chosen = Vec::new();
    while !open.is_empty() {
        let mut counts = std::collections::BTreeMap::new();
        for split in &open {
            for p in split.iter() {
                *counts.entry(*p).or_insert(0usize) += 1;
            }
        }
        // Most pairs first; the lowest index on ties, so the choice is reproducible.
        let (best, _) = counts
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .expect("open pairs have prompts");
        let best = *best;
        chosen.push(best);
        open.retain(|split| !split.contains(&best));
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tokens: &[u32]) -> GreedyRun {
        GreedyRun {
            format: NumericFormat::F32,
            tokens: tokens.to_vec(),
            gaps: vec![0.0; tokens.len()],
        }
    }

    #[test]
    fn the_cover_splits_every_splittable_pair_with_few_prompts() {
        // Prompt 2 splits all three pairs of a, b, c; pairs with d (identical to a) stay unsplit.
        let runs = [
            run(&[1, 1, 1, 5]),
            run(&[1, 2, 2, 5]),
            run(&[3, 1, 3, 5]),
            run(&[1, 1, 1, 5]),
        ];
        let pairs = splitting_prompts(&runs);
        assert_eq!(pairs.len(), 6);
        assert_eq!(pairs[0], ((0, 1), vec![1, 2]));
        assert_eq!(cover(&pairs), [2]);
        assert!(pairs.iter().any(|(p, s)| *p == (0, 3) && s.is_empty()));
    }
}
