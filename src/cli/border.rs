//! `hspi probe border`: border inputs for every EQC pair of an image-model dataset, and how well a
//! majority vote over them identifies each class.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use hspi_collect::backend::image_backend;
use hspi_collect::{Model, ModelId};
use hspi_datasets::{Dataset, ProbeInput};
use hspi_probe::border::{find_border, BorderConfig, Surrogate};

use crate::printer;

pub fn run(
    datasets: &[PathBuf],
    out: &Path,
    evals: usize,
    seed: u64,
    json: bool,
) -> anyhow::Result<()> {
    hspi_collect::backend::prefer_single_threaded_kernels();
    let (records, probes) = super::eqc::load_records(datasets)?;
    let manifest = Dataset::open(&datasets[0])?.manifest;
    let Model::Image(model) = Model::load(ModelId::parse(&manifest.model.id)?, None)? else {
        bail!(
            "border inputs are for image models; {} is not one",
            manifest.model.id
        );
    };
    if model.weights_sha256 != manifest.model.weights_sha256 {
        bail!(
            "{}: collected with other {} weights than this hspi embeds",
            datasets[0].display(),
            model.id
        );
    }
    let grouping = hspi_classify::group_eqcs(&records)?;
    let backends = grouping
        .eqcs
        .iter()
        .map(|e| image_backend(&e.members[0], &model).with_context(|| format!("class {}", e.id)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let starts: Vec<&Vec<f32>> = probes
        .probes
        .iter()
        .filter_map(|p| match &p.input {
            ProbeInput::Image { pixels, .. } => Some(pixels),
            _ => None,
        })
        .collect();
    anyhow::ensure!(
        !starts.is_empty(),
        "the dataset has no image probes to start from"
    );
    let surrogates = grouping
        .eqcs
        .iter()
        .map(|e| Surrogate::new(&e.members[0], &model))
        .collect::<Result<Vec<_>, _>>()?;
    let n = backends.len();
    let mut found = Vec::new();
    let mut missing = Vec::new();
    let mut seconds = Vec::new();
    let mut pair = 0u64;
    for i in 0..n {
        for j in i + 1..n {
            let started = Instant::now();
            let config = BorderConfig {
                search_evals: evals,
                seed: seed.wrapping_add(pair),
                ..Default::default()
            };
            let start = starts[pair as usize % starts.len()];
            match find_border(
                (backends[i].as_ref(), &surrogates[i]),
                (backends[j].as_ref(), &surrogates[j]),
                start,
                &config,
            )? {
                Some(b) => found.push((i, j, b)),
                None => missing.push((grouping.eqcs[i].id.clone(), grouping.eqcs[j].id.clone())),
            }
            seconds.push(started.elapsed().as_secs_f64());
            pair += 1;
        }
    }
    // Majority vote: each border input is a duel between its pair; a class answering it with a's
    // label gives a the win, with b's label b. A class is scored by the share of its duels won
    // (raw counts would favour classes with more borders found); the best score must be unique.
    let mut correct = 0;
    for (t, backend) in backends.iter().enumerate() {
        let (mut wins, mut played) = (vec![0usize; n], vec![0usize; n]);
        for (a, b, border) in &found {
            let z = backend.forward(&[&border.input])?.remove(0);
            let label = hspi_datasets::top_label(&z).unwrap_or(0);
            played[*a] += 1;
            played[*b] += 1;
            if label == border.label_a {
                wins[*a] += 1;
            } else if label == border.label_b {
                wins[*b] += 1;
            }
        }
        let score = |c: usize| {
            if played[c] == 0 {
                0.0
            } else {
                wins[c] as f64 / played[c] as f64
            }
        };
        let best = (0..n).map(score).fold(0.0, f64::max);
        let winners: Vec<usize> = (0..n).filter(|c| score(*c) == best).collect();
        correct += usize::from(winners == [t]);
    }
    let inputs = found.iter().map(|(_, _, b)| ProbeInput::Image {
        shape: model.input_shape.to_vec(),
        pixels: b.input.clone(),
    });
    let set = hspi_probe::seeded_set("border", seed, inputs);
    hspi_probe::write_probe_set(out, &set)?;
    let pairs = n * (n - 1) / 2;
    let mean = seconds.iter().sum::<f64>() / seconds.len().max(1) as f64;
    let max = seconds.iter().copied().fold(0.0, f64::max);
    let accuracy = correct as f64 / n as f64;
    if json {
        printer::data(&serde_json::to_string_pretty(&serde_json::json!({
            "eqcs": n, "pairs": pairs, "found": found.len(), "missing": missing,
            "identification_accuracy": accuracy, "seconds_per_pair_mean": mean, "seconds_per_pair_max": max,
        }))?);
    } else {
        printer::data(&format!(
            "border inputs for {} of {pairs} EQC pairs ({n} EQCs); majority vote identifies {correct}/{n} classes ({:.1} %); {mean:.3} s per pair on average, {max:.3} s at most",
            found.len(),
            accuracy * 100.0
        ));
    }
    Ok(())
}
