//! What this machine can run, per model (`hspi platforms`): the CPU path, the GPUs and their
//! provenance, and every model's platforms.

use hspi_datasets::GpuInfo;
use serde_json::json;

use crate::backend::{cuda_devices, cuda_platforms, cuda_unavailable};
use crate::grid;
use crate::zoo::smollm2;

pub struct Listing {
    pub isa: &'static str,
    pub gpus: Vec<GpuInfo>,
    pub image: Vec<String>,
    pub cuda: Vec<String>,
    pub tiny: Vec<String>,
    pub lm: Vec<String>,
    pub lm_weights: Option<std::path::PathBuf>,
}

fn strings(platforms: Vec<hspi_datasets::Platform>) -> Vec<String> {
    platforms.iter().map(ToString::to_string).collect()
}

impl Listing {
    pub fn detect() -> Listing {
        Listing {
            isa: hspi_datasets::provenance::isa_path(),
            gpus: cuda_devices(),
            image: strings(grid::image_grid()),
            cuda: strings(cuda_platforms()),
            tiny: strings(grid::tiny_lm_grid()),
            lm: strings(grid::lm_grid()),
            lm_weights: smollm2::weights_path(None).ok(),
        }
    }

    pub fn json(&self) -> serde_json::Value {
        json!({
            "cpu_isa": self.isa,
            "gpus": self.gpus,
            "models": {
                "cnn-digits": self.image,
                "cnn-digits-cuda": self.cuda,
                "tiny-lm": self.tiny,
                "smollm2": { "platforms": self.lm, "weights": self.lm_weights },
                "smollm2-cuda": self.cuda,
            }
        })
    }

    pub fn text(&self) -> String {
        let mut out = format!("CPU path: cpu-{}\n", self.isa);
        if self.gpus.is_empty() {
            let why = cuda_unavailable().unwrap_or_else(|| "the driver reports no GPU".into());
            out.push_str(&format!("GPUs: none usable ({why})\n"));
        }
        for gpu in &self.gpus {
            out.push_str(&format!(
                "GPU: {} (sm {}.{}, {} SMs, {:.1} GiB), driver {}, CUDA runtime {}, cuBLAS {}, NVRTC {}\n",
                gpu.name,
                gpu.compute_capability.0,
                gpu.compute_capability.1,
                gpu.sm_count,
                gpu.memory_bytes as f64 / (1u64 << 30) as f64,
                gpu.driver_version,
                gpu.cuda_runtime_version,
                gpu.cublas_version,
                gpu.nvrtc_version
            ));
        }
        let mut group = |title: String, list: &[String]| {
            out.push_str(&title);
            list.iter().for_each(|p| out.push_str(&format!("  {p}\n")));
        };
        if !self.cuda.is_empty() {
            group(
                format!(
                    "\ncnn-digits and smollm2 on the GPU ({} platforms, --platforms cuda):\n",
                    self.cuda.len()
                ),
                &self.cuda,
            );
        }
        group(
            format!(
                "\ncnn-digits ({} platforms, the default grid):\n",
                self.image.len()
            ),
            &self.image,
        );
        group(
            format!("\ntiny-lm ({} platforms):\n", self.tiny.len()),
            &self.tiny,
        );
        group(
            format!("\nsmollm2 ({} platforms):\n", self.lm.len()),
            &self.lm,
        );
        if self.lm_weights.is_none() {
            out.push_str(&format!(
                "  (weights not cached: run `{}`)\n",
                smollm2::FETCH_COMMAND
            ));
        }
        out
    }
}
