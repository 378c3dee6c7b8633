use std::process::ExitCode;

use hspi_collect::{
    backend::{cuda_devices, cuda_platforms},
    grid,
    zoo::smollm2,
};

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let isa = hspi_datasets::provenance::isa_path();
    let image: Vec<String> = grid::image_grid().iter().map(|p| p.to_string()).collect();
    let lm: Vec<String> = grid::lm_grid().iter().map(|p| p.to_string()).collect();
    let gpus = cuda_devices();
    let cuda: Vec<String> = cuda_platforms().iter().map(|p| p.to_string()).collect();
    let tiny: Vec<String> = grid::tiny_lm_grid().iter().map(|p| p.to_string()).collect();
    let lm_weights = smollm2::weights_path(None).ok();
    if args.json {
        let v = serde_json::json!({
            "cpu_isa": isa,
            "gpus": gpus,
            "models": {
                "cnn-digits": image,
                "cnn-digits-cuda": cuda,
                "tiny-lm": tiny,
                "smollm2": { "platforms": lm, "weights": lm_weights },
                "smollm2-cuda": cuda,
            }
        });
        printer::data(&serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = format!("CPU path: cpu-{isa}\n");
    if gpus.is_empty() {
        let why = hspi_collect::backend::cuda_unavailable()
            .unwrap_or_else(|| "the driver reports no GPU".into());
        out.push_str(&format!("GPUs: none usable ({why})\n"));
    }
    for gpu in &gpus {
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
    if !cuda.is_empty() {
        out.push_str(&format!(
            "\ncnn-digits and smollm2 on the GPU ({} platforms, --platforms cuda):\n",
            cuda.len()
        ));
        cuda.iter().for_each(|p| out.push_str(&format!("  {p}\n")));
    }
    out.push_str(&format!(
        "\ncnn-digits ({} platforms, the default grid):\n",
        image.len()
    ));
    image.iter().for_each(|p| out.push_str(&format!("  {p}\n")));
    out.push_str(&format!("\ntiny-lm ({} platforms):\n", tiny.len()));
    tiny.iter().for_each(|p| out.push_str(&format!("  {p}\n")));
    out.push_str(&format!("\nsmollm2 ({} platforms):\n", lm.len()));
    lm.iter().for_each(|p| out.push_str(&format!("  {p}\n")));
    if lm_weights.is_none() {
        out.push_str(&format!(
            "  (weights not cached: run `{}`)\n",
            smollm2::FETCH_COMMAND
        ));
    }
    printer::data(&out);
    Ok(ExitCode::SUCCESS)
}
