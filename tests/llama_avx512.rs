//! llama.cpp built for AVX2 and for AVX-512 (the same source, `.ci/build-llama avx2|avx512`),
//! serving SmolLM2 at F32, F16, Q8_0 and Q4_0 on an AVX-512 Xeon: records collected there by
//! `.ci/llama-avx512-grid` and committed in datasets/atlas/llama-xeon-avx512/. This machine has no
//! AVX-512, so hspi can only recompute the AVX2 builds; these tests check that those recomputed
//! references match the Xeon's bit for bit, and that the AVX-512 builds are told apart from them
//! on prompts the classifier never saw.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn grid() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/atlas/llama-xeon-avx512")
}

fn sets(split: &str) -> Vec<String> {
    let mut dirs: Vec<String> = std::fs::read_dir(grid())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(&format!("-{split}")))
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 8, "{split}: 2 builds × 4 formats");
    dirs
}

fn accuracy_at(section: &serde_json::Value, queries: u64) -> f64 {
    section["by_queries"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0].as_u64() == Some(queries))
        .and_then(|p| p[1].as_f64())
        .unwrap()
}

#[test]
fn avx512_builds_are_told_apart_with_only_avx2_references() {
    let (train, test) = (sets("train"), sets("unseen"));
    let avx2: Vec<String> = ["f32", "f16", "q8_0", "q4_0"]
        .iter()
        .map(|q| format!("cpu-avx2/llamacpp-11434/{q}/bs1"))
        .collect();
    let refs = avx2.join(",");
    let mut args = vec!["eval", "--json", "--queries", "1,4,8", "--train"];
    args.extend(train.iter().map(String::as_str));
    args.push("--test");
    args.extend(test.iter().map(String::as_str));
    args.extend(["--reference-platforms", &refs]);
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["test_probes_seen"], 0, "the test prompts are unseen");
    let (hspi, baseline) = (&report["hspi"], &report["baseline"]);
    eprintln!(
        "8 classes (AVX2 and AVX-512 × 4 formats), AVX2 references only: {:.3} at 1 query, \
         {:.3} at 4, {:.3} at 8; HSPI baseline {:.3} (chance 0.125)",
        accuracy_at(hspi, 1),
        accuracy_at(hspi, 4),
        accuracy_at(hspi, 8),
        accuracy_at(baseline, 1)
    );
    // Measured when committed: 0.969, 0.995, 1.000; baseline 0.213.
    assert!(accuracy_at(hspi, 1) >= 0.9, "{report}");
    assert!(accuracy_at(hspi, 8) >= 0.97, "{report}");
    assert!(
        accuracy_at(baseline, 1) < 0.5,
        "the baseline should not manage this"
    );
}

#[test]
fn the_avx2_build_here_answers_as_it_did_on_the_xeon() {
    let tmp = tempfile::tempdir().unwrap();
    let server = common::llama::start("avx2", "F16");
    let committed = grid().join("avx2-f16-train");
    let out = tmp.path().join("here");
    let r = common::llama::collect_with(
        &server.url,
        "cpu-avx2/llamacpp-11434/f16/bs1",
        committed.join("probes.json").to_str().unwrap(),
        &out,
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run(&[
        "dataset",
        "diff",
        "--json",
        out.to_str().unwrap(),
        committed.to_str().unwrap(),
    ]);
    let d: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(d["pairs"][0]["common_probes"], 40, "{d}");
    assert_eq!(
        (r.code, &d["pairs"][0]["identical"]),
        (0, &serde_json::json!(40)),
        "the same llama-server build and GGUF answer with the same bits on both CPUs: {d}"
    );
}
