//! The PyTorch/transformers serving shim (`.ci/transformers-serve`) on this machine's CPU, with
//! the PyTorch that .ci/setup installs (pinned to the versions that collected
//! datasets/atlas/transformers-cpu): hspi collects it as any OpenAI-compatible endpoint; prompts
//! tokenise as llama-server's do; one request at a time repeats the committed atlas (bit for bit
//! where torch's CPU capability, the CPU's flags and model equal the collecting host's, its
//! greedy texts elsewhere); concurrent requests are batched and change the bits but
//! not whose answer is whose; requests it cannot honour get a 400 that says why.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::torch_host::TorchHost;
use common::*;

fn python() -> PathBuf {
    let p = llama::cache().join("torch-venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run .ci/setup (it installs PyTorch and transformers for the shim)",
        p.display()
    );
    p
}

/// The shim serving SmolLM2 (the packaged Q4_1 file) at fp16 with sdpa attention, batching up
/// to eight requests; killed when dropped.
struct Shim {
    child: Child,
    base: String,
}

impl Shim {
    fn start() -> Shim {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let gguf = llama::cache().join("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
        assert!(
            gguf.exists(),
            "{} is missing: run .ci/setup",
            gguf.display()
        );
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(python())
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/transformers-serve"))
            .args(["--gguf", gguf.to_str().unwrap(), "--dtype", "fp16"])
            .args(["--attn", "sdpa", "--device", "cpu", "--max-batch", "8"])
            .args(["--batch-window-ms", "50", "--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("start .ci/transformers-serve");
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while reqwest::blocking::get(format!("{base}/health")).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "the shim exited ({status}):\n{}",
                    std::fs::read_to_string(log.path()).unwrap_or_default()
                );
            }
            assert!(started.elapsed() < Duration::from_secs(300), "shim not up");
            std::thread::sleep(Duration::from_millis(500));
        }
        Shim { child, base }
    }
}

impl Drop for Shim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn collect(base: &str, label: &str, out: &Path, extra: &[&str]) {
    let probes = atlas("llama-xeon-avx512").join("avx2-f16-unseen/probes.json");
    let r = llama::collect_with(base, label, probes.to_str().unwrap(), out, extra);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn the_transformers_shim_serves_hspi_as_an_openai_endpoint() {
    let shim = Shim::start();
    let tmp = tempfile::tempdir().unwrap();
    let alone = tmp.path().join("alone");
    let version = "transformers-5.23.0-sdpa";
    collect(
        &shim.base,
        &format!("cpu-avx2/{version}/f16/bs1"),
        &alone,
        &[],
    );
    let batched = tmp.path().join("batched");
    collect(
        &shim.base,
        &format!("cpu-avx2/{version}/f16/bs8"),
        &batched,
        &["--concurrency", "8"],
    );

    let (alone, batched) = (records_by_probe(&alone), records_by_probe(&batched));
    let llama = records_by_probe(&atlas("llama-xeon-avx512").join("avx2-f16-unseen"));
    let committed_dir = atlas("transformers-cpu").join("f16-sdpa-unseen");
    let committed = records_by_probe(&committed_dir);
    assert_eq!(alone.len(), 20);
    let mut same_text = 0;
    for (id, r) in &alone {
        let steps = r["outputs"]["steps"].as_array().unwrap();
        assert!(!steps.is_empty() && steps.len() <= 8, "{r}");
        for s in steps {
            assert_eq!(s["top"].as_array().unwrap().len(), 5, "{s}");
            assert_eq!(s["logprob"]["exact_f32"], true, "{s}");
        }
        // The GGUF's chat template, as llama-server renders it: the same prompt tokens.
        assert_eq!(
            r["usage"]["prompt_tokens"], llama[id]["usage"]["prompt_tokens"],
            "prompt {id} tokenised unlike llama-server"
        );
        // Batched with seven others, each request still gets its own answer.
        if r["outputs"]["text"] == batched[id]["outputs"]["text"] {
            same_text += 1;
        }
    }
    assert!(
        same_text >= 16,
        "batched texts differ in {}",
        20 - same_text
    );
    let bits_changed = alone
        .iter()
        .filter(|(id, r)| r["outputs"] != batched[*id]["outputs"])
        .count();
    assert!(bits_changed > 0, "batching of 8 changed no bits");
    eprintln!("batched: {bits_changed} of 20 answers with other bits, {same_text} same text");

    // The committed atlas repeats bit for bit only where torch takes the kernels it took there
    // and splits them over as many threads. torch picks them by its CPU capability and the CPU's
    // flags (oneDNN's bf16/f16 paths), and a "model name" such as "AMD EPYC" names CPUs with and
    // without AVX-512: elsewhere only the greedy texts are compared.
    let texts = alone
        .iter()
        .filter(|(id, r)| r["outputs"]["text"] == committed[*id]["outputs"]["text"])
        .count();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(committed_dir.join("manifest.json")).unwrap())
            .unwrap();
    let there = TorchHost::of_manifest(&manifest["sessions"][0]["provenance"]);
    let here = TorchHost::here(&python());
    if here == there {
        for (id, r) in &alone {
            assert_eq!(r["outputs"], committed[id]["outputs"], "probe {id}");
        }
        eprintln!("atlas collected on this kind of host ({here:?}): bits compared");
    } else {
        eprintln!("note: atlas collected on {there:?}, this is {here:?}: texts compared only");
        assert!(texts >= 16, "{texts} of 20 texts as committed");
    }
}

#[test]
fn the_shim_refuses_what_it_cannot_honour_with_a_reason() {
    let shim = Shim::start();
    let client = reqwest::blocking::Client::new();
    let url = format!("{}/v1/chat/completions", shim.base);
    let ask = |body: &str| {
        let r = client
            .post(&url)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .unwrap();
        (r.status().as_u16(), r.text().unwrap())
    };
    let (status, body) =
        ask(r#"{"model":"smollm2","messages":[{"role":"user","content":"Hi"}],"temperature":0.7}"#);
    assert_eq!(status, 400);
    assert!(body.contains("greedily"), "{body}");
    let (status, body) = ask("{not json");
    assert_eq!(status, 400, "{body}");
    let (status, body) = ask(r#"{"model":"smollm2","temperature":0}"#);
    assert_eq!(status, 400);
    assert!(body.contains("messages"), "{body}");
    let models: serde_json::Value = serde_json::from_str(
        &client
            .get(format!("{}/v1/models", shim.base))
            .send()
            .unwrap()
            .text()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(models["data"][0]["id"], "smollm2");
    assert!(
        models["data"][0]["owned_by"]
            .as_str()
            .unwrap()
            .starts_with("transformers-"),
        "{models}"
    );
}
