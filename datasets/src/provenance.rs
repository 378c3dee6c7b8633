//! Where a dataset was produced: the host, the instruction-set path, the GPUs, the versions.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostProvenance {
    pub cpu_model: String,
    /// The SIMD path the CPU kernels take on this host (what `cpu-ISA` platforms name).
    pub isa: String,
    pub cpu_features: Vec<String>,
    pub os: String,
    pub arch: String,
    pub hostname: String,
    pub hspi_version: String,
    /// Versions of the engines linked into this hspi (candle, …).
    pub engines: Vec<(String, String)>,
    #[serde(default)]
    pub gpus: Vec<GpuInfo>,
    /// GPU platforms this session computed on the CPU with emulated GPU kernels instead of on
    /// the GPU (their records carry the GPU platform's label: they are references for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulation: Option<Emulation>,
}

/// How a session reproduced GPU platforms without their GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Emulation {
    /// The kernel-plan file, as given.
    pub kernel_plans: String,
    /// sha256 of that file.
    pub sha256: String,
    /// The tensor-core rule of each plan's kernels (`sm90`).
    pub rules: Vec<String>,
    pub platforms: Vec<crate::Platform>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    pub name: String,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    pub memory_bytes: u64,
    pub driver_version: String,
    pub cuda_runtime_version: String,
    pub cublas_version: String,
    /// The run-time compiler that built hspi's elementwise kernels for this GPU.
    #[serde(default)]
    pub nvrtc_version: String,
}

impl std::fmt::Display for GpuInfo {
    /// One line, as `hspi platforms` prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (sm {}.{}, {} SMs, {:.1} GiB), driver {}, CUDA runtime {}, cuBLAS {}, NVRTC {}",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sm_count,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.driver_version,
            self.cuda_runtime_version,
            self.cublas_version,
            self.nvrtc_version
        )
    }
}

impl HostProvenance {
    /// Read this machine's provenance. `engines` comes from the caller, which knows what it links.
    pub fn detect(engines: Vec<(String, String)>) -> HostProvenance {
        HostProvenance {
            cpu_model: cpu_model(),
            isa: isa_path().to_string(),
            cpu_features: cpu_features(),
            os: os_release(),
            arch: std::env::consts::ARCH.to_string(),
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            hspi_version: env!("CARGO_PKG_VERSION").to_string(),
            engines,
            gpus: Vec::new(),
            emulation: None,
        }
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

fn os_release() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        });
    format!("{} ({})", std::env::consts::OS, pretty.unwrap_or_default())
}

/// The instruction-set path candle's CPU kernels (gemm) take here. gemm dispatches at run time
/// between x86-64-v3 (AVX2+FMA) and a scalar path; its AVX-512 kernels need a nightly build, so a
/// stable build on an AVX-512 CPU still takes the AVX2 path.
pub fn isa_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return "avx2";
        }
        "generic"
    }
    #[cfg(target_arch = "aarch64")]
    {
        "neon"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        "generic"
    }
}

fn cpu_features() -> Vec<String> {
    #[allow(unused_mut)]
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => {$(
                if is_x86_feature_detected!($f) { out.push($f.to_string()); }
            )*};
        }
        probe!(
            "sse4.2",
            "avx",
            "avx2",
            "fma",
            "f16c",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512bf16",
            "avx512fp16"
        );
    }
    out
}
