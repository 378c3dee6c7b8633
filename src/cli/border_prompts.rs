//! `hspi probe border-prompts`: among prompts collected from several labelled platforms (e.g. one
//! llama-server per format), those on which two platforms' greedy generations diverge — for each
//! pair, the prompt whose divergence comes earliest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::bail;
use hspi_datasets::Outputs;

use crate::printer;

fn tokens(o: &Outputs) -> Option<Vec<&str>> {
    match o {
        Outputs::Completion { steps, .. } if !steps.is_empty() => {
            Some(steps.iter().map(|s| s.token.as_str()).collect())
        }
        _ => None,
    }
}

pub fn run(datasets: &[PathBuf], out: &Path, json: bool) -> anyhow::Result<()> {
    let (records, probes) = super::eqc::load_records(datasets)?;
    // platform → probe → generated tokens
    let mut by_platform: BTreeMap<String, BTreeMap<&str, Vec<&str>>> = BTreeMap::new();
    for r in &records {
        let Some(p) = &r.platform else {
            bail!("record for probe {} from {} has no platform label\nhint: collect reference endpoints with --label PLATFORM", r.probe_id, r.target);
        };
        let Some(t) = tokens(&r.outputs) else {
            bail!(
                "record for probe {} on {p} has no generated tokens with logprobs",
                r.probe_id
            );
        };
        by_platform
            .entry(p.to_string())
            .or_default()
            .insert(r.probe_id.as_str(), t);
    }
    let platforms: Vec<&String> = by_platform.keys().collect();
    let mut chosen: Vec<String> = Vec::new();
    let mut pairs = Vec::new();
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
            pairs.push(serde_json::json!({
                "a": platforms[i], "b": platforms[j],
                "probe": best.map(|(_, p)| p), "diverges_at_step": best.map(|(s, _)| s),
            }));
        }
    }
    let found = pairs.iter().filter(|p| !p["probe"].is_null()).count();
    let set = hspi_datasets::ProbeSet {
        generator: format!("border-prompts:{}", probes.generator),
        seed: probes.seed,
        probes: probes
            .probes
            .iter()
            .filter(|p| chosen.contains(&p.id))
            .cloned()
            .collect(),
    };
    hspi_probe::write_probe_set(out, &set)?;
    if json {
        printer::data(&serde_json::to_string_pretty(&serde_json::json!({
            "platforms": platforms.len(), "pairs": pairs.len(), "found": found, "by_pair": pairs,
        }))?);
    } else {
        printer::data(&format!(
            "border prompts for {found} of {} platform pairs ({} prompts written)",
            pairs.len(),
            set.probes.len()
        ));
    }
    Ok(())
}
