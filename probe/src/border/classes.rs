//! Border inputs for every EQC pair of an image-model dataset, and how well a majority vote over
//! them identifies each class (`hspi probe border`).

use std::path::PathBuf;
use std::time::Instant;

use hspi_collect::backend::image_runner;
use hspi_collect::zoo::recorded_image_model;
use hspi_datasets::{store::load_same_probes, top_label, ProbeInput, ProbeSet};
use serde::Serialize;

use super::{find_border, BorderConfig, Surrogate};
use crate::error::ProbeError;

/// What the search found, as `--json` prints it; `set` is the border probe set.
#[derive(Debug, Serialize)]
pub struct BorderInputs {
    pub eqcs: usize,
    pub pairs: usize,
    pub found: usize,
    pub missing: Vec<(String, String)>,
    pub identification_accuracy: f64,
    pub seconds_per_pair_mean: f64,
    pub seconds_per_pair_max: f64,
    #[serde(skip)]
    pub identified: usize,
    #[serde(skip)]
    pub set: ProbeSet,
}

impl std::fmt::Display for BorderInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "border inputs for {} of {} EQC pairs ({} EQCs); majority vote identifies {}/{} classes ({:.1} %); {:.3} s per pair on average, {:.3} s at most",
            self.found,
            self.pairs,
            self.eqcs,
            self.identified,
            self.eqcs,
            self.identification_accuracy * 100.0,
            self.seconds_per_pair_mean,
            self.seconds_per_pair_max
        )
    }
}

fn unusable(what: &str, reason: String) -> ProbeError {
    ProbeError::Unusable {
        what: what.into(),
        reason,
    }
}

/// Search a border input for every pair of the datasets' EQCs (the datasets share one probe set,
/// whose images are the starting points), then score a majority vote over them.
pub fn border_inputs(
    datasets: &[PathBuf],
    evals: usize,
    seed: u64,
) -> Result<BorderInputs, ProbeError> {
    hspi_collect::backend::prefer_single_threaded_kernels();
    let (records, probes, manifest) = load_same_probes(datasets)?;
    let what = datasets[0].display().to_string();
    let model = recorded_image_model(&what, &manifest.model, None)?;
    let grouping = hspi_classify::group_eqcs(&records)?;
    let backends = grouping
        .eqcs
        .iter()
        .map(|e| image_runner(&e.members[0], &model))
        .collect::<Result<Vec<_>, _>>()?;
    let starts: Vec<&Vec<f32>> = probes
        .probes
        .iter()
        .filter_map(|p| match &p.input {
            ProbeInput::Image { pixels, .. } => Some(pixels),
            _ => None,
        })
        .collect();
    if starts.is_empty() {
        return Err(unusable(
            &what,
            "the dataset has no image probes to start from".into(),
        ));
    }
    let surrogates = grouping
        .eqcs
        .iter()
        .map(|e| Surrogate::new(&e.members[0], &model))
        .collect::<Result<Vec<_>, _>>()?;
    let n = backends.len();
    let (mut found, mut missing, mut seconds) = (Vec::new(), Vec::new(), Vec::new());
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
    let mut identified = 0;
    for (t, backend) in backends.iter().enumerate() {
        let (mut wins, mut played) = (vec![0usize; n], vec![0usize; n]);
        for (a, b, border) in &found {
            let z = backend.forward(&[&border.input])?.remove(0);
            let label = top_label(&z).unwrap_or(0);
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
        identified += usize::from(winners == [t]);
    }
    let inputs = found.iter().map(|(_, _, b)| ProbeInput::Image {
        shape: model.input_shape.to_vec(),
        pixels: b.input.clone(),
    });
    Ok(BorderInputs {
        eqcs: n,
        pairs: n * (n - 1) / 2,
        found: found.len(),
        missing,
        identification_accuracy: identified as f64 / n as f64,
        seconds_per_pair_mean: seconds.iter().sum::<f64>() / seconds.len().max(1) as f64,
        seconds_per_pair_max: seconds.iter().copied().fold(0.0, f64::max),
        identified,
        set: crate::seeded_set("border", seed, inputs),
    })
}
