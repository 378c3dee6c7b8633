//! The response-parser fuzz target (collect/fuzz, built by .ci/setup) run for a fixed count of
//! inputs from the committed seeds: any panic, or an empty error message, fails.

mod common;

use std::path::PathBuf;
use std::process::Command;

const RUNS: &str = "300000";

#[test]
fn response_parsers_survive_a_fixed_count_of_fuzzed_bodies() {
    let bin = common::llama::cache()
        .join("fuzz-target/x86_64-unknown-linux-gnu/release/response_parsers");
    assert!(
        bin.exists(),
        "{} is missing: run .ci/setup (it builds the target with the instrumentation cargo-fuzz adds)",
        bin.display()
    );
    // libFuzzer adds what it finds to the first corpus directory: a copy, not the committed seeds.
    let corpus = tempfile::tempdir().unwrap();
    let seeds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("collect/fuzz/seeds");
    for seed in std::fs::read_dir(&seeds).unwrap() {
        let seed = seed.unwrap().path();
        std::fs::copy(&seed, corpus.path().join(seed.file_name().unwrap())).unwrap();
    }
    let artifacts = tempfile::tempdir().unwrap();
    let out = Command::new(&bin)
        .arg(corpus.path())
        .args([
            &format!("-runs={RUNS}"),
            "-max_len=4096",
            "-seed=1",
            &format!("-artifact_prefix={}/", artifacts.path().display()),
        ])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the fuzz target failed; the crashing input is in the log:\n{}",
        &log[log.len().saturating_sub(4000)..]
    );
    assert!(log.contains(&format!("Done {RUNS} runs")), "{log}");
}
