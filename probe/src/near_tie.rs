//! Stress prompts for language models: among candidate prompts, those whose top-2 next-token
//! logits are nearest a tie on a white-box run, where the smallest rounding difference between two
//! platforms can flip the greedy token.

use hspi_datasets::{Probe, ProbeInput, ProbeSet};

use hspi_collect::backend::TinyLmRunner;
use hspi_collect::zoo::TinyLm;
use hspi_collect::{CollectError, Result};

/// The gap between the two largest logits.
pub fn top2_gap(logits: &[f32]) -> f32 {
    let (mut a, mut b) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
    for &x in logits {
        if x > a {
            b = a;
            a = x;
        } else if x > b {
            b = x;
        }
    }
    a - b
}

/// Keep the `count` prompts of `candidates` with the smallest top-2 gap under `runner`, most tied
/// first; the returned set records the selection in its generator name.
pub fn near_tied(
    lm: &TinyLm,
    runner: &TinyLmRunner,
    candidates: &ProbeSet,
    count: usize,
) -> Result<ProbeSet> {
    let mut scored: Vec<(f32, &Probe)> = Vec::with_capacity(candidates.probes.len());
    for p in &candidates.probes {
        let ProbeInput::Prompt { text, .. } = &p.input else {
            return Err(CollectError::ProbeMismatch {
                probe: p.id.clone(),
                model: "tiny-lm".into(),
                reason: "near-tie selection takes text prompts".into(),
            });
        };
        let gap = top2_gap(&runner.next_token_logits(&lm.encode(text)?)?);
        scored.push((gap, p));
    }
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.id.cmp(&b.1.id)));
    Ok(ProbeSet {
        generator: format!("near-tie:{}", candidates.generator),
        seed: candidates.seed,
        probes: scored
            .into_iter()
            .take(count)
            .map(|(_, p)| p.clone())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_of_the_two_largest() {
        assert_eq!(top2_gap(&[0.0, 3.0, 1.5, 2.5]), 0.5);
        assert_eq!(top2_gap(&[2.0, 2.0]), 0.0);
    }
}

#[cfg(test)]
mod measured {
    use super::*;
    use hspi_datasets::NumericFormat;

    fn flips(lm: &TinyLm, a: &TinyLmRunner, b: &TinyLmRunner, set: &ProbeSet) -> usize {
        let argmax = |v: Vec<f32>| (0..v.len()).max_by(|i, j| v[*i].total_cmp(&v[*j])).unwrap();
        set.probes
            .iter()
            .filter(|p| {
                let ProbeInput::Prompt { text, .. } = &p.input else {
                    return false;
                };
                let ids = lm.encode(text).unwrap();
                argmax(a.next_token_logits(&ids).unwrap())
                    != argmax(b.next_token_logits(&ids).unwrap())
            })
            .count()
    }

    #[test]
    fn near_tied_prompts_flip_the_greedy_token_between_formats_more_often() {
        let lm = TinyLm::embedded();
        let f32r = TinyLmRunner::new(&lm, NumericFormat::F32).unwrap();
        let bf16r = TinyLmRunner::new(&lm, NumericFormat::Bf16).unwrap();
        let candidates = crate::prompts(11, 600, 8, 5);
        let near = near_tied(&lm, &f32r, &candidates, 40).unwrap();
        let plain = ProbeSet {
            probes: candidates.probes[..40].to_vec(),
            ..candidates.clone()
        };
        let (n, p) = (
            flips(&lm, &f32r, &bf16r, &near),
            flips(&lm, &f32r, &bf16r, &plain),
        );
        eprintln!("greedy-token flips f32 vs bf16: near-tied {n}/40, plain {p}/40");
        assert!(n > p, "near-tied {n} vs plain {p}");
    }
}
