//! Border-input search time per EQC pair on the CNN's CPU grid (issue target: ≤ 2 s per pair).
//! `cargo bench -p hspi-probe --bench border_pair [-- PAIRS]`: groups the default grid into EQCs
//! on 20 seeded probes, then times `find_border` on PAIRS pairs spread over all of them (default
//! 40), printing a table and a JSON line.

use std::collections::BTreeMap;
use std::time::Instant;

use hspi_collect::backend::image_runner;
use hspi_collect::grid::default_grid;
use hspi_collect::zoo::cnn_digits;
use hspi_collect::ModelId;
use hspi_datasets::ProbeInput;
use hspi_probe::border::{find_border, BorderConfig, Surrogate};

fn main() {
    hspi_collect::backend::prefer_single_threaded_kernels();
    let sample: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(40);
    let model = cnn_digits::embedded();
    let probes = hspi_probe::random_images(1, 20, model.input_shape);
    let inputs: Vec<&[f32]> = probes
        .probes
        .iter()
        .map(|p| match &p.input {
            ProbeInput::Image { pixels, .. } => pixels.as_slice(),
            _ => unreachable!(),
        })
        .collect();
    let mut classes: BTreeMap<Vec<u32>, Vec<String>> = BTreeMap::new();
    let mut representatives = Vec::new();
    for platform in default_grid(ModelId::CnnDigits) {
        let backend = image_runner(&platform, &model).expect("grid platforms run here");
        let bits: Vec<u32> = backend
            .forward(&inputs)
            .unwrap()
            .iter()
            .flatten()
            .map(|v| v.to_bits())
            .collect();
        let members = classes.entry(bits).or_default();
        if members.is_empty() {
            representatives.push(backend);
        }
        members.push(platform.to_string());
    }
    let n = representatives.len();
    // `f32`: only pairs of f32 platforms, the ones a few ulps apart.
    let only_f32 = std::env::args().any(|a| a == "f32");
    let is_f32 = |i: usize| representatives[i].platform().format.to_string() == "f32";
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .filter(|(a, b)| !only_f32 || (is_f32(*a) && is_f32(*b)))
        .collect();
    let step = (pairs.len() as f64 / sample.min(pairs.len()) as f64).max(1.0);
    let chosen: Vec<(usize, usize)> = (0..sample.min(pairs.len()))
        .map(|i| pairs[(i as f64 * step) as usize])
        .collect();
    let surrogates: Vec<Surrogate> = representatives
        .iter()
        .map(|r| Surrogate::new(r.platform(), &model).unwrap())
        .collect();
    let mut times = Vec::new();
    let mut found = 0;
    for (k, (a, b)) in chosen.iter().enumerate() {
        let started = Instant::now();
        let config = BorderConfig {
            seed: k as u64,
            ..Default::default()
        };
        let r = find_border(
            (representatives[*a].as_ref(), &surrogates[*a]),
            (representatives[*b].as_ref(), &surrogates[*b]),
            inputs[k % inputs.len()],
            &config,
        )
        .unwrap();
        times.push(started.elapsed().as_secs_f64());
        found += usize::from(r.is_some());
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let median = sorted[sorted.len() / 2];
    let p90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)];
    let max = sorted[sorted.len() - 1];
    println!(
        "border search per EQC pair ({} EQCs, {} of {} pairs sampled, {} evals max)",
        n,
        chosen.len(),
        pairs.len(),
        BorderConfig::default().search_evals
    );
    println!("{:<8} {:>9}", "stat", "seconds");
    for (k, v) in [
        ("mean", mean),
        ("median", median),
        ("p90", p90),
        ("max", max),
    ] {
        println!("{k:<8} {v:>9.3}");
    }
    println!("found    {found}/{}", chosen.len());
    println!(
        "{}",
        serde_json::json!({"bench": "border_pair", "eqcs": n, "pairs_sampled": chosen.len(), "found": found,
            "seconds_mean": mean, "seconds_median": median, "seconds_p90": p90, "seconds_max": max, "target_seconds": 2.0})
    );
}
