//! Local collection overhead: wall time of `hspi collect` (CNN, candle f32, 10 000 probes by default (`-- N` for others), every
//! record checksummed and fsynced) against a bare loop of candle forward passes over the same
//! probes, one per call as the collector batches at bs1. `cargo bench --bench local_overhead`.

use std::time::Instant;

use hspi_collect::backend::image_backend;
use hspi_collect::zoo::cnn_digits;
use hspi_datasets::ProbeInput;

fn main() {
    let probes: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    let platform: hspi_datasets::Platform = format!(
        "cpu-{}/candle-0.11.1/f32/bs1",
        hspi_datasets::provenance::isa_path()
    )
    .parse()
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let probes_file = tmp.path().join("probes.json");
    let model = cnn_digits::embedded();
    let set = hspi_probe::random_images(1, probes, model.input_shape);
    hspi_probe::write_probe_set(&probes_file, &set).unwrap();
    let inputs: Vec<&[f32]> = set
        .probes
        .iter()
        .map(|p| match &p.input {
            ProbeInput::Image { pixels, .. } => pixels.as_slice(),
            _ => unreachable!("random images"),
        })
        .collect();
    let (mut hspi, mut bare) = (f64::INFINITY, f64::INFINITY);
    for round in 0..3 {
        let out = tmp.path().join(format!("run-{round}"));
        let started = Instant::now();
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_hspi"))
            .args([
                "collect",
                "--model",
                "cnn-digits",
                "--platforms",
                &platform.to_string(),
            ])
            .args([
                "--probes",
                probes_file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        hspi = hspi.min(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let backend = image_backend(&platform, &model).unwrap();
        let mut sink = 0u32;
        for x in &inputs {
            let y = backend.forward(&[x]).unwrap();
            sink ^= y[0][0].to_bits();
        }
        bare = bare.min(started.elapsed().as_secs_f64());
        std::hint::black_box(sink);
    }
    println!("| {probes} probes, candle f32 | hspi collect | bare forward passes | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| best of 3 | {hspi:.3} s | {bare:.3} s | {:.3} |",
        hspi / bare
    );
    println!(
        "{{\"hspi_s\": {hspi:.4}, \"bare_s\": {bare:.4}, \"ratio\": {:.4}}}",
        hspi / bare
    );
}
