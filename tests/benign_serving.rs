//! Serving features that are no substitution stay benign, and a determinism claim is checked.
//!
//! Speculative decoding: llama-server with a draft model
//! (SmolLM2 Q4_0 drafting for the served model, `--spec-type draft-simple`) keeps the served
//! model's tokens, but this build (11434) prints a logprob of 0 and no alternatives for every
//! token after an answer's first (measured: 7 of 8 tokens per answer). An honest F16 provider
//! drafting so is never accused: its pool audit ends "inconclusive" (the format consistent, the
//! platform unknown), its fresh-prompt audit "consistent", and the parameters line fails naming
//! the missing alternatives; Q8_0 drafting so and sold as F16 is still a format mismatch naming
//! q8_0 in both audits.
//!
//! Determinism (`hspi audit --deterministic`): a provider claiming batch-invariant answers has
//! every second answered prompt asked again. A llama-server computing one request at a time
//! (`-np 1`) repeats itself bit for bit however loaded (the line passes); one batching four
//! concurrent requests, loaded by other clients, answers repeats otherwise (the line fails, with
//! the jitter).

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::llama;

const F16: &str = "*/*/f16/*";

/// A llama-server at `quant` drafting with SmolLM2 Q4_0.
fn drafting(quant: &str) -> llama::LlamaServer {
    let draft = llama::gguf("Q4_0");
    llama::LlamaServer::start_with(
        &llama::build("avx2"),
        &llama::gguf(quant),
        "smollm2",
        &[
            "-md",
            draft.to_str().unwrap(),
            "--spec-type",
            "draft-simple",
            "--spec-draft-n-max",
            "4",
        ],
    )
    .unwrap_or_else(|e| panic!("llama-server ({quant}, drafting) did not start: {e}"))
}

/// The pool audit and the fresh-prompt audit of `base` claimed F16: (exit code, report) each.
fn audits(base: &str, out: &Path) -> [(i32, serde_json::Value); 2] {
    let weights = llama::smollm2_gguf();
    let fresh = [
        "--weights",
        weights.to_str().unwrap(),
        "--fresh-formats",
        "f32,f16,q8_0,q4_0",
    ];
    [(&[][..], "pool"), (&fresh[..], "fresh")].map(|(extra, name)| {
        let mut flags = vec!["--draw-seed", "5"];
        flags.extend(extra);
        let (code, report, err) =
            common::pack_audit(&common::shipped_pack(), base, F16, &out.join(name), &flags);
        assert!(code <= 4, "{name}: {err}");
        (code, report)
    })
}

/// The report's row for `dimension`: status and nearest value.
fn row(report: &serde_json::Value, dimension: &str) -> (String, String) {
    let d = report["evidence"]["verification"]["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["dimension"] == dimension)
        .unwrap_or_else(|| panic!("no {dimension} row in {report}"));
    (
        d["status"].as_str().unwrap().to_string(),
        d["nearest"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn speculative_decoding_is_never_accused_and_hides_no_substitution() {
    let honest = drafting("F16");
    let cheap = drafting("Q8_0");
    let tmp = tempfile::tempdir().unwrap();

    // The server does speculate: it reports drafted tokens.
    let body = serde_json::json!({
        "model": "smollm2", "max_tokens": 8, "temperature": 0,
        "messages": [{"role": "user", "content": "Tell me about the sea."}],
    });
    let r = common::post_json(&format!("{}/v1/chat/completions", honest.url), &body);
    assert!(
        r["timings"]["draft_n"].as_u64().unwrap_or(0) > 0,
        "no drafted tokens: {r}"
    );

    let [(pool_code, pool), (fresh_code, fresh)] = audits(&honest.url, &tmp.path().join("honest"));
    assert_eq!(
        pool_code, 3,
        "pool: inconclusive, never accused: {}",
        pool["summary"]
    );
    assert_eq!(row(&pool, "format").0, "consistent", "{}", pool["summary"]);
    assert_eq!(fresh_code, 0, "fresh: consistent: {}", fresh["summary"]);
    assert_eq!(
        row(&fresh, "format").0,
        "consistent",
        "{}",
        fresh["summary"]
    );
    for report in [&pool, &fresh] {
        let parameters = report["contract"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "parameters")
            .unwrap();
        assert_eq!(parameters["status"], "fail", "{parameters}");
        assert!(
            parameters["detail"]
                .as_str()
                .unwrap()
                .contains("top_logprobs not honoured"),
            "{parameters}"
        );
    }

    for (code, report) in audits(&cheap.url, &tmp.path().join("cheap")) {
        assert_eq!(code, 1, "Q8_0 drafting, sold as F16: {}", report["summary"]);
        let (status, nearest) = row(&report, "format");
        assert_eq!(status, "mismatch");
        assert!(nearest.starts_with("q8_0"), "{nearest}");
    }
}

/// Clients keeping `base` busy with their own chat requests until the guard drops.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn on(base: &str, clients: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..clients)
            .map(|c| {
                let (stop, url) = (stop.clone(), format!("{base}/v1/chat/completions"));
                std::thread::spawn(move || {
                    let http = reqwest::blocking::Client::new();
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let body = serde_json::json!({
                            "model": "smollm2", "max_tokens": 16, "temperature": 0.7,
                            "cache_prompt": false,
                            "messages": [{"role": "user",
                                "content": format!("Client {c} asks question {n} about rivers.")}],
                        });
                        let _ = http
                            .post(&url)
                            .header("content-type", "application/json")
                            .body(body.to_string())
                            .send();
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The determinism line of an audit of `base` (claimed F16, `--deterministic`) while three
/// other clients load it.
fn determinism_under_load(base: &str, out: &Path) -> serde_json::Value {
    let _load = Load::on(base, 3);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (code, report, err) = common::pack_audit(
        &common::shipped_pack(),
        base,
        F16,
        out,
        &["--deterministic", "--draw-seed", "3"],
    );
    assert!(code <= 4, "{err}");
    assert_ne!(
        code, 1,
        "honest F16 is never accused: {}",
        report["summary"]
    );
    report["contract"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "determinism")
        .unwrap_or_else(|| panic!("no determinism line: {}", report["contract"]))
        .clone()
}

#[test]
fn a_determinism_claim_holds_one_at_a_time_and_fails_under_batching() {
    let build = llama::build("avx2");
    let single =
        llama::LlamaServer::start_with(&build, &llama::gguf("F16"), "smollm2", &["-np", "1"])
            .unwrap_or_else(|e| panic!("llama-server (one slot) did not start: {e}"));
    let batching = llama::start("avx2", "F16");
    let tmp = tempfile::tempdir().unwrap();

    let line = determinism_under_load(&single.url, &tmp.path().join("single"));
    assert_eq!(line["status"], "pass", "{line}");

    // Batched with other clients' requests, a repeat computes other bits; each audit repeats a
    // few prompts, so up to three audits are given to see it.
    let lines: Vec<serde_json::Value> = (0..3)
        .map(|i| determinism_under_load(&batching.url, &tmp.path().join(format!("batching-{i}"))))
        .take_while(|l| l["status"] != "fail")
        .collect();
    assert!(
        lines.len() < 3,
        "a batching server under load repeated itself: {lines:?}"
    );
}
