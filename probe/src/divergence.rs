//! Border prompts from collected answers (`hspi probe border-prompts DIR...`): among prompts
//! collected from several labelled platforms (e.g. one llama-server per format), for each pair of
//! platforms the prompt on which their greedy generations diverge earliest.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hspi_datasets::{store::load_same_probes, Outputs, ProbeSet};
use serde::Serialize;

use crate::error::ProbeError;

/// Per pair of platforms, the earliest-diverging prompt; `set` holds the prompts chosen.
#[derive(Debug, Serialize)]
pub struct Divergence {
    pub platforms: usize,
    pub pairs: usize,
    pub found: usize,
    pub by_pair: Vec<PairDivergence>,
    #[serde(skip)]
    pub set: ProbeSet,
}

#[derive(Debug, Serialize)]
pub struct PairDivergence {
    pub a: String,
    pub b: String,
    pub probe: Option<String>,
    pub diverges_at_step: Option<usize>,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "border prompts for {} of {} platform pairs ({} prompts written)",
            self.found,
            self.pairs,
            self.set.probes.len()
        )
    }
}

fn tokens(o: &Outputs) -> Option<Vec<&str>> {
    match o {
        Outputs::Completion { steps, .. } if !steps.is_empty() => {
            Some(steps.iter().map(|s| s.token.as_str()).collect())
        }
        _ => None,
    }
}

pub fn divergent_prompts(datasets: &[PathBuf]) -> Result<Divergence, ProbeError> {
    let (records, probes, _) = load_same_probes(datasets)?;
    // platform → probe → generated tokens
    let mut by_platform: BTreeMap<String, BTreeMap<&str, Vec<&str>>> = BTreeMap::new();
    for r in &records {
        let what = format!("record for probe {}", r.probe_id);
        let Some(p) = &r.platform else {
            return Err(ProbeError::Unusable {
                what,
                reason: format!("from {} has no platform label\nhint: collect reference endpoints with --label PLATFORM", r.target),
            });
        };
        let Some(t) = tokens(&r.outputs) else {
            return Err(ProbeError::Unusable {
                what,
                reason: format!("on {p} has no generated tokens with logprobs"),
            });
        };
        by_platform
            .entry(p.to_string())
            .or_default()
            .insert(r.probe_id.as_str(), t);
    }
    let platforms: Vec<&String> = by_platform.keys().collect();
    let mut chosen: Vec<String> = Vec::new();
    let mut by_pair = Vec::new();
    for i in 0..platforms.len() {
        for j in i + 1..platforms.len() {
            let (a, b) = (&by_platform[platforms[i]], &by_platform[platforms[j]]);
            let best = a
                .iter()
                .filter_map(|(probe, ta)| {
                    let tb = b.get(probe)?;
                    let step = ta.iter().zip(tb.iter()).position(|(x, y)| x != y)?;
                    Some((step, *probe))
                })
                .min();
            if let Some((_, probe)) = best {
                if !chosen.iter().any(|c| c == probe) {
                    chosen.push(probe.to_string());
                }
            }
            by_pair.push(PairDivergence {
                a: platforms[i].clone(),
                b: platforms[j].clone(),
                probe: best.map(|(_, p)| p.to_string()),
                diverges_at_step: best.map(|(s, _)| s),
            });
        }
    }
    let set = ProbeSet {
        generator: format!("border-prompts:{}", probes.generator),
        seed: probes.seed,
        probes: probes
            .probes
            .iter()
            .filter(|p| chosen.contains(&p.id))
            .cloned()
            .collect(),
    };
    Ok(Divergence {
        platforms: platforms.len(),
        pairs: by_pair.len(),
        found: by_pair.iter().filter(|p| p.probe.is_some()).count(),
        by_pair,
        set,
    })
}
