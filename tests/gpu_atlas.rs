//! The committed GPU atlas (datasets/atlas/, collected on an NVIDIA H100 by .ci/gpu-atlas) read
//! on a machine without a GPU: the records are intact, name the GPU that made them, and every
//! GPU platform falls in an equivalence class of its own, apart from every CPU platform hspi
//! computes here on the same probes.

mod common;

use common::*;
use hspi_datasets::Dataset;

/// Collect `platforms` on this machine over the atlas dataset's own probe set, then group the
/// atlas and the local records together: each class's members.
fn eqcs_with_local(name: &str, model: &str, platforms: &str) -> Vec<Vec<String>> {
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("cpu");
    let probes = atlas(name).join("probes.json");
    let r = run(&[
        "collect",
        "--model",
        model,
        "--probes",
        probes.to_str().unwrap(),
        "--platforms",
        platforms,
        "--out",
        local.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    eqcs(&[&atlas(name), &local])
}

fn assert_gpu_classes_apart(eqcs: &[Vec<String>], gpu_platforms: usize, min_gpu_classes: usize) {
    let is_gpu = |p: &String| p.starts_with("cuda-");
    for class in eqcs {
        assert!(
            class.iter().all(is_gpu) || !class.iter().any(is_gpu),
            "a GPU and a CPU platform answered every probe bit for bit alike: {class:?}"
        );
    }
    let gpu: Vec<&Vec<String>> = eqcs.iter().filter(|c| c.iter().all(is_gpu)).collect();
    assert_eq!(gpu.iter().map(|c| c.len()).sum::<usize>(), gpu_platforms);
    assert!(
        gpu.len() >= min_gpu_classes,
        "{} GPU classes: {gpu:?}",
        gpu.len()
    );
}

#[test]
fn the_atlas_records_are_intact_and_name_the_gpu() {
    for (name, records) in [("cnn-digits-h100", 3000), ("smollm2-h100-bs1", 20)] {
        let r = run(&["dataset", "verify", atlas(name).to_str().unwrap()]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let dataset = Dataset::open(atlas(name)).unwrap();
        assert_eq!(dataset.records().unwrap().len(), records, "{name}");
        let session = &dataset.manifest.sessions[0];
        let gpu = &session.provenance.gpus[0];
        assert_eq!(gpu.name, "NVIDIA H100 80GB HBM3", "{name}");
        assert_eq!((gpu.compute_capability, gpu.sm_count), ((9, 0), 132));
        assert!(dataset.manifest.platforms.iter().all(|p| p
            .to_string()
            .starts_with("cuda-nvidia-h100-80gb-hbm3-sm90-132sm/cublas-13.1.0/")));
    }
}

#[test]
fn cnn_gpu_platforms_stand_apart_from_the_cpu_grid() {
    let eqcs = eqcs_with_local("cnn-digits-h100", "cnn-digits", "default");
    // 15 GPU platforms: 5 precisions × batch 1, 8, 32. On the H100, f32 and tf32 differ at every
    // batch size; bf16 not at all; f16 only between batch 1 and the rest (11 classes recorded).
    assert_gpu_classes_apart(&eqcs, 15, 11);
    assert!(eqcs.len() >= 11 + 24, "{} classes", eqcs.len());
}

#[test]
fn smollm2_gpu_platforms_stand_apart_from_candle_on_the_cpu() {
    let eqcs = eqcs_with_local("smollm2-h100-bs1", "smollm2", "default");
    assert_gpu_classes_apart(&eqcs, 5, 5);
}

/// Every dense family's tiny model on an NVIDIA H200 (`families-h200-bs1/`, collected by
/// collect/tests/cuda.rs from the models committed beside the records): the records are intact
/// and name the GPU and the weights; each family's five GPU precisions are five classes apart
/// from hspi's CPU formats on the same probes; the H200's f32 answers are hspi's CPU F32 pass's
/// within 1e-6 (relative error over all logits).
#[test]
fn every_dense_familys_gpu_answers_stand_apart_and_its_f32_is_the_cpus() {
    let root = atlas("families-h200-bs1");
    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let cpu = ["f32", "f16", "q8_0", "bf16"]
        .map(|f| format!("{isa}/candle-0.11.1/{f}/bs1"))
        .join(",");
    let tmp = tempfile::tempdir().unwrap();
    for arch in ["llama-plain", "llama", "qwen2", "qwen3", "gemma3"] {
        let gpu = root.join(arch);
        let weights = root.join("models").join(format!("{arch}.gguf"));
        let r = run(&["dataset", "verify", gpu.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{arch}: {}", r.stderr);
        let dataset = Dataset::open(&gpu).unwrap();
        assert_eq!(
            dataset.manifest.sessions[0].provenance.gpus[0].name,
            "NVIDIA H200"
        );
        let sha = hspi_collect::zoo::weights_sha256(&weights).unwrap();
        assert_eq!(dataset.manifest.model.weights_sha256, sha, "{arch}");
        let local = tmp.path().join(arch);
        let r = run(&[
            "collect",
            "--model",
            &format!("tiny-{arch}"),
            "--weights",
            weights.to_str().unwrap(),
            "--probes",
            gpu.join("probes.json").to_str().unwrap(),
            "--platforms",
            &cpu,
            "--out",
            local.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{arch}: {}", r.stderr);
        let eqcs = eqcs(&[&gpu, &local]);
        assert_gpu_classes_apart(&eqcs, 5, 5);
        let f32_logits = |dir: &std::path::Path, prefix: &str| -> Vec<(String, Vec<f32>)> {
            let mut out: Vec<(String, Vec<f32>)> = Dataset::open(dir)
                .unwrap()
                .records()
                .unwrap()
                .into_iter()
                .filter(|r| {
                    let p = r.platform.as_ref().unwrap().to_string();
                    p.starts_with(prefix) && p.ends_with("/f32/bs1")
                })
                .map(|r| match r.outputs {
                    hspi_datasets::Outputs::Logits { values } => (r.probe_id, values.to_f32()),
                    other => panic!("{arch}: not logits: {other:?}"),
                })
                .collect();
            out.sort_by(|a, b| a.0.cmp(&b.0));
            out
        };
        let (h200, here) = (f32_logits(&gpu, "cuda-"), f32_logits(&local, "cpu-"));
        assert_eq!(h200.len(), 8, "{arch}");
        let (mut diff, mut norm) = (0f64, 0f64);
        for ((p, g), (q, c)) in h200.iter().zip(&here) {
            assert_eq!(p, q);
            for (a, b) in g.iter().zip(c) {
                diff += (*a as f64 - *b as f64).powi(2);
                norm += (*b as f64).powi(2);
            }
        }
        let relative = (diff / norm).sqrt();
        assert!(
            relative < 1e-6,
            "{arch}: the H200's f32 is {relative:e} from the CPU's"
        );
    }
}
