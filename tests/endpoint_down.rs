//! A provider that goes down mid-audit: llama-server killed once it has given its first answer.
//! The audit stops within seconds (3 prompts in a row unanswered after every retry), keeps the
//! answer it got, names the endpoint's failure in its verdict and transport line, and exits 5.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::llama;

#[test]
fn an_endpoint_killed_mid_audit_ends_it_within_seconds_with_the_answers_kept() {
    let server = llama::start("avx2", "F16");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("audit");
    let url = format!("{}/v1/chat/completions", server.url);
    let weights = llama::smollm2_gguf();
    // Error targets so strict that no verdict comes before the whole draw: the server is killed
    // while the audit is still asking.
    let child = common::hspi()
        .args([
            "audit",
            "--endpoint",
            &url,
            "--pack",
            common::shipped_pack().to_str().unwrap(),
            "--claim",
            "*/*/f16/*",
            "--out",
            out.to_str().unwrap(),
            "--weights",
            weights.to_str().unwrap(),
            "--fresh-formats",
            "f32,f16",
            "--false-accusation",
            "1e-12",
            "--false-acceptance",
            "1e-12",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first answer is in the journal once the dataset has it: then the provider dies.
    let journal = out.join("journal.jsonl");
    let started = Instant::now();
    while std::fs::read_to_string(&journal).map_or(true, |j| j.lines().count() < 1) {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no first answer"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(server);
    let killed = Instant::now();
    let done = child.wait_with_output().unwrap();
    let took = killed.elapsed();
    let stderr = String::from_utf8_lossy(&done.stderr);
    eprintln!("the audit ended {took:?} after the endpoint died");
    assert!(
        took < Duration::from_secs(30),
        "the audit took {took:?} after the endpoint died:\n{stderr}"
    );
    assert_eq!(done.status.code(), Some(5), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&done.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{stderr}"));
    let verification = &report["evidence"]["verification"];
    let down = verification["endpoint_down"].as_str().unwrap_or_default();
    assert!(
        down.starts_with("the endpoint went down") && down.contains("cannot connect"),
        "{verification}"
    );
    assert_eq!(verification["verdict"]["verdict"], "inconclusive");
    let transport = report["contract"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "transport")
        .unwrap();
    assert_eq!(transport["status"], "fail", "{transport}");
    assert!(
        transport["detail"]
            .as_str()
            .unwrap()
            .starts_with("the endpoint went down"),
        "{transport}"
    );
    // The answers received before it died are kept, with their references.
    let kept = common::records_by_probe(&out);
    assert!(!kept.is_empty(), "the answer before the failure is kept");
    assert_eq!(verification["queries"].as_u64(), Some(kept.len() as u64));
    assert!(out.join("references/manifest.json").exists());
    assert!(out.join("audit.json").exists());
}
