//! Audits a provider cannot prepare for (`hspi audit --weights`): prompts made for each audit,
//! their references computed by hspi on the provider's own tokens (teacher forcing), against
//! real llama-servers behind providers that recognise the pack's public pool or sample every
//! answer at temperature 0.8. The 200-audit figures replay answers collected once, with the
//! references computed for them, through `hspi verify --references OUT/references --audits`.

mod common;

use std::path::Path;

use common::fresh::{replayed, verdicts};
use common::llama;
use common::router::{pool_aware, Router};
use hspi_datasets::NumericFormat;

/// llama.cpp's formats: the claim F16 and what a provider would sell in its place.
const FORMATS: &str = "f32,f16,q8_0,q4_0";
/// Answers collected per provider for the replayed audits.
const ANSWERS: usize = 32;

/// [`common::fresh::answers_with_references`] at llama.cpp's formats.
fn answers_with_references(
    base: &str,
    seed: u64,
    out: &Path,
) -> (std::path::PathBuf, std::path::PathBuf) {
    common::fresh::answers_with_references(base, seed, ANSWERS, &formats(), out)
}
const F16: &str = "*/*/f16/*";

fn formats() -> Vec<NumericFormat> {
    FORMATS.split(',').map(|f| f.parse().unwrap()).collect()
}

/// A provider that samples at temperature 0.8 whatever it is asked (a new seed per request).
fn sampling(upstream: &str) -> Router {
    let upstream = upstream.to_string();
    Router::start(Box::new(move |n, request| {
        request["temperature"] = 0.8.into();
        request["seed"] = (1000 + n).into();
        upstream.clone()
    }))
}

/// `hspi audit --weights` of `base` with fresh prompts: exit code, JSON report, stderr.
fn fresh_audit(base: &str, out: &Path, seed: &str) -> (i32, serde_json::Value, String) {
    fresh_audit_with(base, out, seed, &[])
}

/// The same with `more` flags.
fn fresh_audit_with(
    base: &str,
    out: &Path,
    seed: &str,
    more: &[&str],
) -> (i32, serde_json::Value, String) {
    let w = llama::smollm2_gguf();
    let mut flags = vec![
        "--weights",
        w.to_str().unwrap(),
        "--fresh-formats",
        FORMATS,
        "--draw-seed",
        seed,
    ];
    flags.extend(more);
    common::pack_audit(&common::shipped_pack(), base, F16, out, &flags)
}

/// The reference records an audit wrote, in order.
fn references_in(out: &Path) -> Vec<hspi_datasets::Record> {
    hspi_datasets::Dataset::open(out.join("references"))
        .unwrap()
        .records()
        .unwrap()
}

#[test]
fn fresh_prompts_catch_what_the_public_pool_cannot_and_sampled_answers_are_weighed() {
    let f16 = llama::start("avx2", "F16");
    let q8 = llama::start("avx2", "Q8_0");
    let q4 = llama::start("avx2", "Q4_0");
    let tmp = tempfile::tempdir().unwrap();

    // A provider holding the pack: the pool's prompts go to an honest F16 server, every other
    // prompt to a Q8_0 one.
    let aware = pool_aware(&f16.url, &q8.url);

    // The pool audit is fooled, and its report says it cannot rule this out.
    let (code, report, err) = common::pack_audit(
        &common::shipped_pack(),
        &aware.url,
        F16,
        &tmp.path().join("pool"),
        &[],
    );
    assert_eq!(code, 0, "the pool audit sees only the honest server: {err}");
    let limits = report["limitations"].to_string();
    assert!(limits.contains("could recognise its prompts"), "{limits}");

    // Fresh prompts: one audit through the command, then 200 over answers collected once.
    let (code, report, err) = fresh_audit(&aware.url, &tmp.path().join("fresh"), "7");
    assert_eq!(
        code, 1,
        "Q8_0 behind the pool-aware proxy is a mismatch: {err}"
    );
    let summary = report["summary"].to_string();
    assert!(summary.contains("q8_0"), "{summary}");
    assert!(
        report["limitations"]
            .to_string()
            .contains("made for this audit alone"),
        "{}",
        report["limitations"]
    );
    assert!(
        tmp.path().join("fresh/references/manifest.json").exists(),
        "the references are kept with the answers"
    );
    // The same audit with each format made per answer from its kept file (about two formats in
    // memory at once): the same answers get the very same references and verdict.
    let (code, _, err) = fresh_audit_with(
        &aware.url,
        &tmp.path().join("fresh-per-answer"),
        "7",
        &["--fresh-memory", "per-answer"],
    );
    assert_eq!(code, 1, "made per answer: {err}");
    let (held, made) = (
        references_in(&tmp.path().join("fresh")),
        references_in(&tmp.path().join("fresh-per-answer")),
    );
    assert!(!held.is_empty());
    assert_eq!(
        serde_json::to_value(made.iter().map(|r| &r.outputs).collect::<Vec<_>>()).unwrap(),
        serde_json::to_value(held.iter().map(|r| &r.outputs).collect::<Vec<_>>()).unwrap(),
        "references made per answer are the held engines' bit for bit"
    );
    let (answers, refs) = answers_with_references(&aware.url, 11, &tmp.path().join("aware"));
    let tally = replayed(&answers, &refs, F16, 64);
    assert!(
        verdicts(&tally, "mismatch") >= 198,
        "the pool-aware provider's fresh answers within 64 tokens: {tally}"
    );

    // Providers that sample at temperature 0.8: every position is weighed on the provider's
    // own tokens.
    let (code, report, err) =
        fresh_audit(&sampling(&f16.url.clone()).url, &tmp.path().join("s"), "8");
    assert_ne!(
        code, 1,
        "an honest sampling F16 server is not accused: {err}"
    );
    let parameters = report["contract"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "parameters")
        .unwrap()
        .clone();
    assert_eq!(
        parameters["status"], "fail",
        "temperature 0 not honoured: {parameters}"
    );
    let honest = sampling(&f16.url.clone());
    let (answers, refs) = answers_with_references(&honest.url, 12, &tmp.path().join("sf16"));
    let tally = replayed(&answers, &refs, F16, 128);
    assert_eq!(
        verdicts(&tally, "mismatch"),
        0,
        "honest F16, sampled: {tally}"
    );
    for (server, name) in [(&q8, "q8"), (&q4, "q4")] {
        let provider = sampling(&server.url.clone());
        let (answers, refs) =
            answers_with_references(&provider.url, 13, &tmp.path().join(format!("s{name}")));
        let tally = replayed(&answers, &refs, F16, 128);
        assert!(
            verdicts(&tally, "mismatch") >= 198,
            "{name} sampled, sold as F16, within 128 tokens: {tally}"
        );
    }

    // The provider's own engine at hand: a second llama-server of the same build at F16, named
    // as a reference server, reproduces an honest F16 provider bit for bit on every answer; a
    // Q8_0 provider sold as F16 is still a format mismatch.
    let reference = llama::start("avx2", "F16");
    let platform = format!("{}={}", reference.url, llama::build("avx2").platform("F16"));
    let with_server = |base: &str, out: &str| {
        let w = llama::smollm2_gguf();
        common::pack_audit(
            &common::shipped_pack(),
            base,
            F16,
            &tmp.path().join(out),
            &[
                "--weights",
                w.to_str().unwrap(),
                "--fresh-formats",
                FORMATS,
                "--reference-server",
                &platform,
                "--draw-seed",
                "21",
            ],
        )
    };
    let (code, report, err) = with_server(&f16.url, "exact-f16");
    assert_eq!(code, 0, "honest F16 with its engine at hand: {err}");
    let methods: Vec<&str> = report["evidence"]["verification"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["method"].as_str().unwrap())
        .collect();
    assert!(
        !methods.is_empty() && methods.iter().all(|m| *m == "reference-match"),
        "every answer reproduced bit for bit by the reference server: {methods:?}"
    );
    let (code, report, err) = with_server(&q8.url, "exact-q8");
    assert_eq!(code, 1, "Q8_0 sold as F16, the F16 engine at hand: {err}");
    assert!(
        report["evidence"]["verification"]["verdict"]["likely_platform"]
            .as_str()
            .unwrap()
            .contains("q8_0"),
        "{}",
        report["evidence"]["verification"]["verdict"]
    );
    // A reference server that does not answer is refused before any request is paid for.
    let url = format!("{}/v1/chat/completions", f16.url);
    let out = tmp.path().join("no-server");
    let r = common::run(&[
        "audit",
        "--endpoint",
        &url,
        "--pack",
        common::shipped_pack().to_str().unwrap(),
        "--claim",
        F16,
        "--out",
        out.to_str().unwrap(),
        "--weights",
        llama::smollm2_gguf().to_str().unwrap(),
        "--reference-server",
        "http://127.0.0.1:9=cpu-avx2/llamacpp-11434/f16/bs1",
    ]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("http://127.0.0.1:9/health") && !r.stderr.contains("query 1"),
        "{}",
        r.stderr
    );
}
