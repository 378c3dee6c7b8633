//! Local collection overhead: wall time of `hspi collect` (CNN, candle f32, 10 000 probes by default (`-- N` for others), every
//! record checksummed and fsynced) against a bare loop of candle forward passes over the same
//! probes, one per call as the collector batches at bs1: with candle's default kernel threads,
//! with one, and with one kernel thread per core each running its share of the inputs (what
//! `hspi collect` does for image models). `cargo bench --bench local_overhead`.

use std::time::Instant;

use hspi_collect::backend::image_runner;
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
    // hspi runs small image models on one kernel thread (same bits, far fewer wake-ups); the bare
    // loop is timed both ways and hspi compared with the faster.
    let (mut hspi, mut bare_default, mut bare_single) =
        (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    let backend = image_runner(&platform, &model).unwrap();
    let bare_loop = || {
        let started = Instant::now();
        let mut sink = 0u32;
        for x in &inputs {
            let y = backend.forward(&[x]).unwrap();
            sink ^= y[0][0].to_bits();
        }
        std::hint::black_box(sink);
        started.elapsed().as_secs_f64()
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut workers: Vec<_> = (0..cores)
        .map(|_| image_runner(&platform, &model).unwrap())
        .collect();
    let mut bare_parallel_loop = || {
        let started = Instant::now();
        let part = inputs.len().div_ceil(cores);
        std::thread::scope(|scope| {
            for (backend, chunk) in workers.iter_mut().zip(inputs.chunks(part)) {
                scope.spawn(move || {
                    let mut sink = 0u32;
                    for x in chunk {
                        sink ^= backend.forward(&[x]).unwrap()[0][0].to_bits();
                    }
                    std::hint::black_box(sink);
                });
            }
        });
        started.elapsed().as_secs_f64()
    };
    let mut bare_parallel = f64::INFINITY;
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
            .env_remove("RAYON_NUM_THREADS")
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        hspi = hspi.min(started.elapsed().as_secs_f64());
        std::env::remove_var("RAYON_NUM_THREADS");
        bare_default = bare_default.min(bare_loop());
        std::env::set_var("RAYON_NUM_THREADS", "1");
        bare_single = bare_single.min(bare_loop());
        bare_parallel = bare_parallel.min(bare_parallel_loop());
    }
    // The target compares with the serial loop a bare script would run; the parallel loop shows
    // what hspi still costs beyond the forward passes when both use every core.
    let bare = bare_default.min(bare_single);
    println!("| {probes} probes, candle f32, best of 3 | seconds | hspi / this |");
    println!("|---|---|---|");
    println!(
        "| hspi collect (process start, probe file, checksummed fsynced appends) | {hspi:.3} | |"
    );
    println!(
        "| bare forward passes, candle's default threads | {bare_default:.3} | {:.3} |",
        hspi / bare_default
    );
    println!(
        "| bare forward passes, one kernel thread | {bare_single:.3} | {:.3} |",
        hspi / bare_single
    );
    println!(
        "| bare forward passes, one kernel thread on each of {cores} cores | {bare_parallel:.3} | {:.3} |",
        hspi / bare_parallel
    );
    println!(
        "{{\"hspi_s\": {hspi:.4}, \"bare_default_threads_s\": {bare_default:.4}, \"bare_one_thread_s\": {bare_single:.4}, \"bare_all_cores_s\": {bare_parallel:.4}, \"ratio\": {:.4}, \"ratio_all_cores\": {:.4}, \"target\": 1.05}}",
        hspi / bare,
        hspi / bare_parallel
    );
}
