//! docs/troubleshooting.md tried: each row's failure provoked as a user meets it, its message
//! checked against the row's, then the fix the row names run against it. A row with no case here
//! (or a case naming a test that does not exist) fails `every_row_of_the_page_is_tried`.

mod common;

use std::path::{Path, PathBuf};

use common::fake::{chat_answer, ok as reply, FakeEndpoint};
use common::*;

/// Each row's key (a part of its first column) and the function that tries its fix: in this
/// file, or `FILE::FN` in another test file.
const TRIED: &[(&str, &str)] = &[
    (
        "matches no platform the model knows",
        "a_claim_no_class_has_is_refused_and_a_covered_word_audited",
    ),
    (
        "weights for smollm2 not found at",
        "missing_weights_are_named_and_weights_given_serve",
    ),
    (
        "build it with .ci/build-llama avx2",
        "a_missing_llama_cpp_and_fp6_are_named_and_the_fixes_build_the_pack",
    ),
    (
        "--formats fp6",
        "a_missing_llama_cpp_and_fp6_are_named_and_the_fixes_build_the_pack",
    ),
    (
        "stored in int8-w8a8",
        "collect/tests/compressed_tensors.rs::a_checkpoint_is_served_at_its_own_format_only",
    ),
    (
        "cannot store a layer 576 wide",
        "an_int4_group_that_does_not_fit_names_those_that_do",
    ),
    (
        "budget reached",
        "a_spending_cap_ends_an_audit_with_its_answers",
    ),
    (
        "asked for model 'X'",
        "a_renamed_model_is_refused_and_allowed_on_request",
    ),
    (
        "returns no logprobs",
        "tests/http_endpoint.rs::bad_answers_get_clear_errors_and_lose_nothing",
    ),
    (
        "corrupt pack",
        "a_corrupt_pack_is_named_and_a_fresh_copy_verifies",
    ),
    (
        "is for model X, not Y",
        "a_pack_of_another_model_is_refused_and_the_right_one_audits",
    ),
    (
        "exit 3, \"inconclusive\"",
        "an_inconclusive_audit_is_decided_by_what_its_next_step_says",
    ),
    (
        "exit 5",
        "an_endpoint_that_went_down_is_audited_again_once_it_answers",
    ),
    (
        "exit 4",
        "an_unknown_platform_is_decided_once_its_references_are_added",
    ),
    (
        "pdfinfo: Syntax Error",
        "an_audit_report_renders_again_to_a_clean_pdf",
    ),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The first column of the page's table, one entry per row.
fn rows() -> Vec<String> {
    let page = std::fs::read_to_string(root().join("docs/troubleshooting.md")).unwrap();
    page.lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| message") && !l.starts_with("| ---"))
        .map(|l| {
            l.split(" | ")
                .next()
                .unwrap()
                .trim_start_matches("| ")
                .replace('`', "")
        })
        .collect()
}

#[test]
fn every_row_of_the_page_is_tried() {
    let rows = rows();
    assert!(rows.len() >= 15, "{rows:?}");
    let this = std::fs::read_to_string(root().join("tests/troubleshooting.rs")).unwrap();
    for row in &rows {
        let cases: Vec<_> = TRIED.iter().filter(|(key, _)| row.contains(key)).collect();
        assert_eq!(cases.len(), 1, "row {row:?}: {} cases", cases.len());
        let (file, name) = match cases[0].1.split_once("::") {
            Some((file, name)) => (std::fs::read_to_string(root().join(file)).unwrap(), name),
            None => (this.clone(), cases[0].1),
        };
        assert!(
            file.contains(&format!("fn {name}(")),
            "row {row:?}: no test fn {name}"
        );
    }
    for (key, _) in TRIED {
        assert!(rows.iter().any(|r| r.contains(key)), "no row says {key:?}");
    }
}

/// `hspi` run with `HSPI_CACHE` at `cache` (an empty one: a fresh machine's).
fn run_in_cache(cache: &Path, args: &[&str]) -> Run {
    let out = hspi().env("HSPI_CACHE", cache).args(args).output().unwrap();
    Run::from(out)
}

fn avx512(set: &str) -> String {
    atlas("llama-xeon-avx512").join(set).display().to_string()
}

#[test]
fn a_claim_no_class_has_is_refused_and_a_covered_word_audited() {
    let pack = shipped_pack();
    let served = atlas("vllm-cpu").join("bf16-unseen");
    let r = verify_with_pack(&pack, &served, "*/*/mxfp8/*", &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("matches no platform the model knows"),
        "{}",
        r.stderr
    );
    // The fix: a router word the pack covers.
    let r = verify_with_pack(&pack, &served, "*/*/bf16/*", &[]);
    assert_ne!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.contains("verdict:"), "{}", r.stdout);
}

/// `hspi serve` with `args`, in `cache`: the first line it prints (its URL once serving), or its
/// error; stopped either way.
fn serve_first_line(cache: &Path, args: &[&str]) -> (Option<i32>, String) {
    use std::io::BufRead;
    let mut child = hspi()
        .env("HSPI_CACHE", cache)
        .args(["serve", "--port", "0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    if !line.is_empty() {
        let _ = child.kill();
        let _ = child.wait();
        return (None, line);
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn missing_weights_are_named_and_weights_given_serve() {
    let empty = tempfile::tempdir().unwrap();
    let platform = format!(
        "cpu-{}/candle/f16/bs1",
        hspi_datasets::provenance::isa_path()
    );
    let (code, said) = serve_first_line(
        empty.path(),
        &["--model", "smollm2", "--platform", &platform],
    );
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("weights for smollm2 not found at") && said.contains("--weights PATH"),
        "{said}"
    );
    // The fix: the weights named. (`hspi fetch smollm2`, the other, is what .ci/setup runs.)
    let weights = common::llama::smollm2_gguf();
    let (code, said) = serve_first_line(
        empty.path(),
        &[
            "--model",
            "smollm2",
            "--platform",
            &platform,
            "--weights",
            weights.to_str().unwrap(),
        ],
    );
    assert_eq!(code, None, "{said}");
    assert!(said.starts_with("http://127.0.0.1:"), "{said}");
}

#[test]
fn an_int4_group_that_does_not_fit_names_those_that_do() {
    let isa = hspi_datasets::provenance::isa_path();
    let cache = common::llama::cache();
    let at = |format: &str| {
        serve_first_line(
            &cache,
            &[
                "--model",
                "smollm2",
                "--platform",
                &format!("cpu-{isa}/candle/{format}/bs1"),
            ],
        )
    };
    let (code, said) = at("int4-w4a16-g128");
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("cannot store a layer 576 wide (its group does not divide it)")
            && said.contains("int4-w4a16-g64"),
        "{said}"
    );
    // The fix: a group the message lists.
    let (code, said) = at("int4-w4a16-g64");
    assert_eq!(code, None, "{said}");
}

/// A tiny llama-architecture GGUF `.ci/tiny-models` made: a pack builds from it in seconds.
fn tiny_llama() -> PathBuf {
    common::llama::cache().join("tiny-models/llama/llama-F32.gguf")
}

#[test]
fn a_missing_llama_cpp_and_fp6_are_named_and_the_fixes_build_the_pack() {
    let empty = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let gguf = tiny_llama();
    let build = |formats: &str, extra: &[&str], out: &str| {
        let out = tmp.path().join(out);
        let mut args = vec![
            "pack",
            "build",
            "--model",
            "my-llama",
            "--gguf",
            gguf.to_str().unwrap(),
            "--formats",
            formats,
            "--count",
            "8",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        (run_in_cache(empty.path(), &args), out)
    };
    // A fresh machine without llama.cpp built: the error and its hint.
    let (r, _) = build("f16,q8_0", &[], "no-llama");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("hint: build it with `.ci/build-llama avx2`")
            && r.stderr.contains("--llama-bin DIR"),
        "{}",
        r.stderr
    );
    // fp6: no engine computes it and no platform can name it.
    let (r, _) = build("fp6,f16,q8_0", &[], "fp6");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "--formats fp6: no engine here computes a fp6 format yet, and no platform can name one"
        ),
        "{}",
        r.stderr
    );
    // The fixes: --llama-bin DIR, fp6 left out. The pack builds and verifies.
    let bin = common::llama::server_bin("avx2");
    let bin_dir = bin.parent().unwrap().to_str().unwrap();
    let (r, out) = build("f16,q8_0", &["--llama-bin", bin_dir], "built");
    assert_eq!(r.code, 0, "{}", r.stderr);
    ok(&["pack", "verify", out.to_str().unwrap()]);
}

#[test]
fn a_renamed_model_is_refused_and_allowed_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let renamed = FakeEndpoint::start(vec![reply(chat_answer("other-model", 1))], 4);
    let collect = |out: &str, extra: &[&str]| {
        let out = tmp.path().join(out);
        let mut args = vec![
            "collect",
            "--endpoint",
            &renamed.url,
            "--model",
            "m",
            "--probes",
            "1",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let r = collect("refused", &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("asked for model 'm' but the endpoint answered as 'other-model'"),
        "{}",
        r.stderr
    );
    let r = collect("allowed", &["--allow-model-mismatch"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_corrupt_pack_is_named_and_a_fresh_copy_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = |to: &Path| {
        let r = std::process::Command::new("cp")
            .args(["-r", shipped_pack().to_str().unwrap(), to.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(r.success());
    };
    let pack = tmp.path().join("pack");
    copy(&pack);
    let pool = pack.join("pool.json");
    let mut text = std::fs::read_to_string(&pool).unwrap();
    text.push('\n');
    std::fs::write(&pool, text).unwrap();
    let r = run(&["pack", "verify", pack.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("corrupt pack") && r.stderr.contains("pool.json has sha256"),
        "{}",
        r.stderr
    );
    // The fix: the pack again from its source.
    std::fs::remove_dir_all(&pack).unwrap();
    copy(&pack);
    ok(&["pack", "verify", pack.to_str().unwrap()]);
}

#[test]
fn an_unknown_platform_is_decided_once_its_references_are_added() {
    let tmp = tempfile::tempdir().unwrap();
    let formats = ["f32", "f16", "q8_0", "q4_0"];
    let sets = |isa: &str, split: &str| -> Vec<String> {
        formats
            .iter()
            .map(|f| avx512(&format!("{isa}-{f}-{split}")))
            .collect()
    };
    let verify = |classifier: &Path, refs: Vec<String>| {
        let served = avx512("avx512-q8_0-unseen");
        let mut args = vec![
            "verify",
            served.as_str(),
            "--classifier",
            classifier.to_str().unwrap(),
            "--claim",
            "cpu-avx512/llamacpp/q8_0/*",
            "--references",
        ];
        args.extend(refs.iter().map(String::as_str));
        run(&args)
    };
    let train = |out: &Path, sets: Vec<String>| {
        let mut args = vec!["train", "--out", out.to_str().unwrap()];
        args.extend(sets.iter().map(String::as_str));
        ok(&args);
    };
    // The AVX-512 build is a stack the auditor holds no reference for: its hardware is unknown.
    let avx2 = tmp.path().join("avx2.json");
    train(&avx2, sets("avx2", "train"));
    let r = verify(&avx2, sets("avx2", "unseen"));
    assert_eq!(r.code, 4, "{}", r.stdout);
    assert!(r.stdout.contains("hardware: inconclusive"), "{}", r.stdout);
    // The fix: references for the provider's stack (its classes and its answers to the pool).
    let both = tmp.path().join("both.json");
    train(
        &both,
        [sets("avx2", "train"), sets("avx512", "train")].concat(),
    );
    let r = verify(
        &both,
        [sets("avx2", "unseen"), sets("avx512", "unseen")].concat(),
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("verdict: consistent"), "{}", r.stdout);
}

#[test]
fn an_audit_report_renders_again_to_a_clean_pdf() {
    // An old PDF's cause (tagging) is gone from this version; the fix renders the report's
    // JSON again, here the committed sample audit's.
    let tmp = tempfile::tempdir().unwrap();
    let pdf = tmp.path().join("audit.pdf");
    let json = root().join("docs/sample-report/audit.json");
    ok(&[
        "report",
        "--from",
        json.to_str().unwrap(),
        "--format",
        "pdf",
        "--out",
        pdf.to_str().unwrap(),
    ]);
    assert_pdf_opens_cleanly(&pdf);
}

/// The rows a user meets auditing a live endpoint, one F16 llama-server shared.
#[test]
fn live_audits_fixed_as_the_page_says() {
    let server = common::llama::start("avx2", "F16");
    let url = server.url.clone();
    let tmp = tempfile::tempdir().unwrap();
    a_spending_cap_ends_an_audit_with_its_answers(&url, tmp.path());
    a_pack_of_another_model_is_refused_and_the_right_one_audits(&url, tmp.path());
    an_inconclusive_audit_is_decided_by_what_its_next_step_says(&url, tmp.path());
    an_endpoint_that_went_down_is_audited_again_once_it_answers(&url, tmp.path());
}

/// `hspi audit --json` of the server at `base` claimed f16 with the shipped pack, plus `extra`:
/// the exit code, the report (none for an error) and stderr.
fn audit(base: &str, out: &Path, extra: &[&str]) -> (i32, serde_json::Value, String) {
    pack_audit(&shipped_pack(), base, "*/*/f16/*", out, extra)
}

fn next_step(report: &serde_json::Value) -> String {
    report["summary"]["next_step"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn a_spending_cap_ends_an_audit_with_its_answers(url: &str, tmp: &Path) {
    let (code, report, err) = audit(url, &tmp.join("capped"), &["--max-requests", "1"]);
    assert_eq!(code, 3, "{err}");
    let verdict = report["summary"]["finding"].as_str().unwrap();
    assert!(
        verdict.contains("budget reached: the next request could exceed 1 requests"),
        "{report}"
    );
    assert!(
        next_step(&report).contains("--max-requests") && !err.contains("rerun with --resume"),
        "{report}\n{err}"
    );
    assert!(
        tmp.join("capped/records").exists(),
        "the answer paid for is kept"
    );
    // The fix: a larger cap, the audit again.
    let (code, report, err) = audit(url, &tmp.join("uncapped"), &["--max-requests", "40"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(report["summary"]["verdict"], "consistent", "{report}");
}

fn a_pack_of_another_model_is_refused_and_the_right_one_audits(url: &str, tmp: &Path) {
    let (code, _, err) = audit(url, &tmp.join("gemma"), &["--model", "gemma3-270m"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("is for model smollm2, not gemma3-270m") && err.contains("hspi pack list"),
        "{err}"
    );
    let (code, _, err) = audit(url, &tmp.join("smollm2"), &["--model", "smollm2"]);
    assert_eq!(code, 0, "{err}");
}

fn an_inconclusive_audit_is_decided_by_what_its_next_step_says(url: &str, tmp: &Path) {
    // A pool audit that drew too few prompts: more tokens cannot help, --draw does.
    let (code, report, err) = audit(url, &tmp.join("draw-1"), &["--draw", "1"]);
    assert_eq!(code, 3, "{err}");
    let step = next_step(&report);
    assert!(
        step.contains("--draw N") && step.contains("cannot help"),
        "{step}"
    );
    let (code, _, err) = audit(url, &tmp.join("draw-8"), &["--draw", "8"]);
    assert_eq!(code, 0, "{err}");
    // A fresh audit whose token budget ended first: a larger --max-tokens-total.
    let weights = common::llama::smollm2_gguf();
    let fresh = |out: &str, tokens: &str| {
        audit(
            url,
            &tmp.join(out),
            &[
                "--weights",
                weights.to_str().unwrap(),
                "--fresh-formats",
                "f16,q8_0,q4_0",
                "--max-tokens-total",
                tokens,
            ],
        )
    };
    let (code, report, err) = fresh("fresh-8", "8");
    assert_eq!(code, 3, "{err}");
    assert!(
        next_step(&report).contains("--max-tokens-total"),
        "{report}"
    );
    let (code, _, err) = fresh("fresh-128", "128");
    assert_eq!(code, 0, "{err}");
}

fn an_endpoint_that_went_down_is_audited_again_once_it_answers(url: &str, tmp: &Path) {
    // A port nothing listens on: every prompt refused.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let down = format!("http://127.0.0.1:{closed}");
    let (code, report, err) = audit(&down, &tmp.join("down"), &[]);
    assert_eq!(code, 5, "{err}");
    assert!(
        report["summary"]["finding"]
            .as_str()
            .unwrap()
            .contains("the endpoint went down"),
        "{report}"
    );
    // The fix: an endpoint that answers, audited again.
    let (code, _, err) = audit(url, &tmp.join("up"), &[]);
    assert_eq!(code, 0, "{err}");
}
