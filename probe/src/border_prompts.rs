//! Border prompts for language models, found white-box: the greedy next token of every candidate
//! prompt at each platform's format, from full next-token logits computed locally (SmolLM2 through
//! candle's quantized llama, prompts tokenised as llama.cpp does). Two platforms are split by a
//! prompt when their greedy tokens differ; a greedy set cover keeps few prompts for all pairs.

use hspi_datasets::top_label;
use std::path::Path;

use hspi_datasets::NumericFormat;

use hspi_collect::backend::QuantizedLm;
use hspi_collect::zoo::bpe::Bpe;
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

/// White-box border prompts over `candidates` (`hspi probe border-prompts --white-box`), as
/// `--json` prints them; `set` holds the prompts the cover keeps.
#[derive(Debug, serde::Serialize)]
pub struct WhiteBox {
    pub formats: usize,
    pub candidates: usize,
    pub pairs: usize,
    pub found: usize,
    pub prompts_written: usize,
    pub seconds: f64,
    pub by_pair: Vec<WhiteBoxPair>,
    #[serde(skip)]
    pub set: hspi_datasets::ProbeSet,
}

#[derive(Debug, serde::Serialize)]
pub struct WhiteBoxPair {
    pub a: String,
    pub b: String,
    pub prompts_splitting: usize,
    pub example: Option<String>,
}

impl std::fmt::Display for WhiteBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for p in &self.by_pair {
            writeln!(
                f,
                "{:>6} vs {:<6} {:>4} of {} prompts split them",
                p.a, p.b, p.prompts_splitting, self.candidates
            )?;
        }
        write!(
            f,
            "border prompts for {} of {} format pairs, white-box ({} prompts written, {:.1} s)",
            self.found, self.pairs, self.prompts_written, self.seconds
        )
    }
}

/// Greedy next tokens of every candidate prompt at every format, computed locally on SmolLM2
/// (`weights`, default the `hspi fetch smollm2` cache), and a set cover of the splitting prompts.
pub fn white_box(
    weights: Option<&Path>,
    formats: &[NumericFormat],
    candidates: &hspi_datasets::ProbeSet,
) -> std::result::Result<WhiteBox, crate::ProbeError> {
    if formats.len() < 2 {
        return Err(crate::ProbeError::Unusable {
            what: "--formats".into(),
            reason: "name at least two formats to split".into(),
        });
    }
    let weights = hspi_collect::zoo::smollm2::weights_path(weights)?;
    let texts: Vec<String> = candidates
        .probes
        .iter()
        .filter_map(|p| match &p.input {
            hspi_datasets::ProbeInput::Prompt { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    let started = std::time::Instant::now();
    let runs = greedy_runs(&weights, formats, &texts)?;
    let pairs = splitting_prompts(&runs);
    let chosen = cover(&pairs);
    let set = crate::seeded_set(
        &format!("border-prompts-white-box:{}", candidates.generator),
        candidates.seed,
        chosen.iter().map(|i| candidates.probes[*i].input.clone()),
    );
    let by_pair = pairs
        .iter()
        .map(|((i, j), split)| WhiteBoxPair {
            a: runs[*i].format.to_string(),
            b: runs[*j].format.to_string(),
            prompts_splitting: split.len(),
            example: split.first().map(|p| texts[*p].clone()),
        })
        .collect();
    Ok(WhiteBox {
        formats: formats.len(),
        candidates: texts.len(),
        pairs: pairs.len(),
        found: pairs.iter().filter(|(_, s)| !s.is_empty()).count(),
        prompts_written: set.probes.len(),
        seconds: started.elapsed().as_secs_f64(),
        by_pair,
        set,
    })
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
