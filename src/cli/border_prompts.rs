//! `hspi probe border-prompts`: among prompts collected from several labelled platforms (e.g. one
//! llama-server per format), those on which two platforms' greedy generations diverge — for each
//! pair, the prompt whose divergence comes earliest — or, `--white-box`, from SmolLM2's full
//! logits computed locally at each format.

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

/// `--white-box`: greedy next tokens of every candidate at every format, computed locally.
pub fn white_box(
    weights: Option<&Path>,
    formats: &[String],
    candidates: &hspi_datasets::ProbeSet,
    out: &Path,
    json: bool,
) -> anyhow::Result<()> {
    use hspi_probe::border_prompts::{cover, greedy_runs, splitting_prompts};
    let formats = formats
        .iter()
        .map(|f| {
            f.parse::<hspi_datasets::NumericFormat>()
                .map_err(|e| anyhow::anyhow!("--formats: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(
        formats.len() >= 2,
        "--formats: name at least two formats to split"
    );
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
    let runs = greedy_runs(&weights, &formats, &texts)?;
    let pairs = splitting_prompts(&runs);
    let chosen = cover(&pairs);
    let set = hspi_probe::seeded_set(
        &format!("border-prompts-white-box:{}", candidates.generator),
        candidates.seed,
        chosen.iter().map(|i| candidates.probes[*i].input.clone()),
    );
    hspi_probe::write_probe_set(out, &set)?;
    let found = pairs.iter().filter(|(_, s)| !s.is_empty()).count();
    let seconds = started.elapsed().as_secs_f64();
    if json {
        let by_pair: Vec<serde_json::Value> = pairs
            .iter()
            .map(|((i, j), split)| {
                serde_json::json!({"a": runs[*i].format.to_string(), "b": runs[*j].format.to_string(),
                    "prompts_splitting": split.len(), "example": split.first().map(|p| &texts[*p])})
            })
            .collect();
        printer::data(&serde_json::to_string_pretty(&serde_json::json!({
            "formats": formats.len(), "candidates": texts.len(), "pairs": pairs.len(), "found": found,
            "prompts_written": set.probes.len(), "seconds": seconds, "by_pair": by_pair,
        }))?);
    } else {
        for ((i, j), split) in &pairs {
            printer::data(&format!(
                "{:>6} vs {:<6} {:>4} of {} prompts split them",
                runs[*i].format.to_string(),
                runs[*j].format.to_string(),
                split.len(),
                texts.len()
            ));
        }
        printer::data(&format!(
            "border prompts for {found} of {} format pairs, white-box ({} prompts written, {seconds:.1} s)",
            pairs.len(),
            set.probes.len()
        ));
    }
    Ok(())
}
