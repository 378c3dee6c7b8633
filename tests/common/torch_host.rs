//! The host a torch-based engine (transformers, vLLM) computed on, as far as it decides the bits:
//! tests compare an engine's answers with a committed atlas bit for bit only on such a host.

use std::path::Path;
use std::process::Command;

/// What decides which kernels torch runs on a CPU, and how it splits their work: the CPU
/// capability torch dispatches on, the CPU's instruction-set flags (as hspi's provenance records
/// them), its model name, and the threads torch runs (a GEMM split over more threads may sum
/// in another order).
#[derive(Debug, PartialEq)]
pub struct TorchHost {
    pub capability: String,
    pub cpu_features: Vec<String>,
    pub cpu_model: String,
    pub threads: usize,
}

/// The threads torch ran when the committed torch atlases were collected: on the 2-core
/// development VM (datasets/atlas/README.md), torch's default of one per core. Their provenance
/// does not record it.
const ATLAS_THREADS: usize = 2;

impl TorchHost {
    /// This machine, torch's capability as the torch of `python` reports it.
    pub fn here(python: &Path) -> TorchHost {
        let stdout = prints(
            python,
            "import torch; print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())",
        );
        let host = hspi_datasets::HostProvenance::detect(Vec::new());
        let (capability, threads) = stdout.trim().split_once(' ').expect("capability threads");
        TorchHost {
            capability: capability.to_string(),
            cpu_features: host.cpu_features,
            cpu_model: host.cpu_model,
            threads: threads.parse().expect("torch's thread count"),
        }
    }

    /// The host a dataset was collected on, from its provenance; the capability torch takes on
    /// those flags (AVX-512 needs F, BW and VL, as hspi records them; AVX2 needs FMA).
    pub fn of_manifest(provenance: &serde_json::Value) -> TorchHost {
        let cpu_features: Vec<String> = provenance["cpu_features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect();
        let has = |f: &str| cpu_features.iter().any(|g| g == f);
        let capability = if has("avx512f") && has("avx512bw") && has("avx512vl") {
            "AVX512"
        } else if has("avx2") && has("fma") {
            "AVX2"
        } else {
            "DEFAULT"
        };
        TorchHost {
            capability: capability.to_string(),
            cpu_features,
            cpu_model: provenance["cpu_model"].as_str().unwrap().to_string(),
            threads: ATLAS_THREADS,
        }
    }
}

/// What `python -c code` prints (the test fails with its stderr where it fails).
pub fn prints(python: &Path, code: &str) -> String {
    let out = Command::new(python)
        .args(["-c", code])
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
