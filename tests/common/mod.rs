#![allow(dead_code)]

pub mod fake;
pub mod figures;
pub mod forced_gap;
pub mod fresh;
pub mod llama;
pub mod proxy;
pub mod router;
pub mod serve;
pub mod shapes;
pub mod substitutes;
pub mod tokenize;
pub mod torch_host;
pub mod vllm;

use std::path::Path;
use std::process::{Command, Output};

/// POSTs `body` to `url` and reads the JSON answer, panicking with the URL and the whole error
/// chain. The timeout is long on purpose: a loaded 2-core CI machine takes well over reqwest's
/// default 30 s to prefill a long prompt (the Gemma test's 650 tokens at F16 did).
pub fn post_json(url: &str, body: &serde_json::Value) -> serde_json::Value {
    let text = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(900))
        .build()
        .unwrap()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .and_then(|r| r.error_for_status())
        .and_then(|r| r.text())
        .unwrap_or_else(|e| panic!("{url}: {e:?}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text}"))
}

/// The guide's pages: the README, then docs/*.md in name order.
pub fn guide_pages() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    pages
}

/// The SmolLM2 audit pack shipped in the repository.
pub fn shipped_pack() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/packs/smollm2-llamacpp")
}

/// The Gemma-3-270M audit pack shipped in the repository.
pub fn gemma_pack() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/packs/gemma3-270m-mixed")
}

/// Gemma-3-270M's packaged GGUF (Q4_K_M, `hspi fetch gemma3-270m`): the weights its pack was
/// built from.
pub fn gemma_gguf() -> std::path::PathBuf {
    hspi_collect::zoo::gemma3_270m::weights_path(None)
        .expect("Gemma-3-270M is not cached: run .ci/setup (hspi fetch gemma3-270m)")
}

/// The shipped pack's reference datasets, sorted.
pub fn shipped_references() -> Vec<std::path::PathBuf> {
    pack_references(&shipped_pack())
}

/// The reference datasets of the pack at `pack`.
pub fn pack_references(pack: &Path) -> Vec<std::path::PathBuf> {
    let mut refs: Vec<std::path::PathBuf> = std::fs::read_dir(pack.join("references"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    refs.sort();
    refs
}

/// `hspi collect` of `base`'s chat answers (an endpoint under audit: unlabelled, as SmolLM2) to
/// the probe set `probes` into `out`.
pub fn chat_answers(base: &str, probes: &Path, out: &Path) -> std::path::PathBuf {
    chat_answers_of("smollm2", base, probes, out)
}

/// [`chat_answers`] asking for `model`.
pub fn chat_answers_of(model: &str, base: &str, probes: &Path, out: &Path) -> std::path::PathBuf {
    ok(&[
        "collect",
        "--endpoint",
        &format!("{base}/v1/chat/completions"),
        "--model",
        model,
        "--probes",
        probes.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    out.to_path_buf()
}

/// [`chat_answers`] to the shipped pack's whole pool.
pub fn pool_answers(base: &str, out: &Path) -> std::path::PathBuf {
    chat_answers(base, &shipped_pack().join("pool.json"), out)
}

/// A directory of the committed atlas, `datasets/atlas/NAME`.
pub fn atlas(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/atlas")
        .join(name)
}

/// `hspi verify --audits 200 --json` of the `served` dataset against `claim`, with `classifier`
/// and `refs`, each audit stopping before `max_tokens` output tokens: the tally.
pub fn audits<R: AsRef<str>>(
    classifier: &Path,
    refs: &[R],
    served: &Path,
    claim: &str,
    max_tokens: u64,
) -> serde_json::Value {
    audits_over(200, classifier, refs, &[served], claim, max_tokens)
}

/// `count` audits as [`audits`] does, over the answers of several datasets of one served
/// platform.
pub fn audits_over<R: AsRef<str>, P: AsRef<Path>>(
    count: u64,
    classifier: &Path,
    refs: &[R],
    served: &[P],
    claim: &str,
    max_tokens: u64,
) -> serde_json::Value {
    let (count, tokens) = (count.to_string(), max_tokens.to_string());
    let mut args = vec!["verify"];
    args.extend(served.iter().map(|p| p.as_ref().to_str().unwrap()));
    args.extend([
        "--json",
        "--classifier",
        classifier.to_str().unwrap(),
        "--claim",
        claim,
        "--audits",
        &count,
        "--max-tokens-total",
        &tokens,
        "--references",
    ]);
    args.extend(refs.iter().map(AsRef::as_ref));
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// `hspi audit --pack PACK --json` of `base`'s chat endpoint against `claim`: the exit code, the
/// JSON report and stderr.
pub fn pack_audit(
    pack: &Path,
    base: &str,
    claim: &str,
    out: &Path,
    extra: &[&str],
) -> (i32, serde_json::Value, String) {
    let url = format!("{base}/v1/chat/completions");
    let mut args = vec![
        "audit",
        "--endpoint",
        &url,
        "--pack",
        pack.to_str().unwrap(),
        "--claim",
        claim,
        "--out",
        out.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let r = run(&args);
    // An error (exit 2) writes no report: the caller reads why from stderr.
    let report = match r.code {
        2 => serde_json::Value::Null,
        _ => serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{}\n{}", r.stdout, r.stderr)),
    };
    (r.code, report, r.stderr)
}

/// `hspi pack build` of SmolLM2 from trusted endpoints (`(base URL, platform label)`), `count`
/// generated prompts, into `out`.
pub fn pack_from_endpoints(out: &Path, count: usize, endpoints: &[(&str, String)]) -> Run {
    let mut args = vec![
        "pack".to_string(),
        "build".into(),
        "--model".into(),
        "smollm2".into(),
        "--count".into(),
        count.to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    for (base, label) in endpoints {
        args.extend([
            "--reference-endpoint".into(),
            format!("{base}/v1/chat/completions"),
            "--label".into(),
            label.clone(),
        ]);
    }
    run(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// probe id -> record, of one dataset (its shards read as JSON lines, no hspi code).
pub fn records_by_probe(dir: &Path) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut out = std::collections::BTreeMap::new();
    for shard in std::fs::read_dir(dir.join("records")).unwrap() {
        for line in std::fs::read_to_string(shard.unwrap().path())
            .unwrap()
            .lines()
        {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            out.insert(r["probe_id"].as_str().unwrap().to_string(), r);
        }
    }
    out
}

/// A count over 200 audits that the guide states, held within [`STATED_SLACK`] of the stated
/// figure: a regression crosses it, a CPU whose kernels round one value differently does not.
pub fn assert_stated(what: &str, measured: u64, stated: u64) {
    print_measured(what, measured, &[stated]);
    assert!(
        remeasuring() || measured.abs_diff(stated) <= STATED_SLACK,
        "{what}: {measured}, the guide states {stated} (allowed ±{STATED_SLACK})"
    );
}

/// Each stated figure as measured, on stderr: shown with `-- --nocapture` (how the guide's
/// figures are measured again), or beside a failure. With `HSPI_REMEASURE=1` in the
/// environment a figure off the guide is printed and not asserted, so that one run measures
/// every figure of a test after a change that moves several (the guide is then edited, and the
/// test run again without it).
fn print_measured(what: &str, measured: u64, stated: &[u64]) {
    eprintln!("measured: {what}: {measured} (the guide states {stated:?})");
}

/// Whether this run measures the guide's figures again rather than holding them.
fn remeasuring() -> bool {
    std::env::var_os("HSPI_REMEASURE").is_some_and(|v| v == "1")
}

/// How far a count over 200 audits may fall from the figure the guide states (1 %).
pub const STATED_SLACK: u64 = 2;

/// A count over 200 audits of answers a test collected live from a server on this machine:
/// held within [`LIVE_SLACK`] of the stated figure, as another CPU's kernels may move a few.
pub fn assert_stated_live(what: &str, measured: u64, stated: u64) {
    print_measured(what, measured, &[stated]);
    assert!(
        remeasuring() || measured.abs_diff(stated) <= LIVE_SLACK,
        "{what}: {measured}, the guide states {stated} (allowed ±{LIVE_SLACK} for answers collected live)"
    );
}

/// How far a count over 200 audits of live answers may fall from the stated figure (5 %).
pub const LIVE_SLACK: u64 = 10;

/// The format dimension's status in an audit report (`hspi audit --json`).
pub fn format_verdict(report: &serde_json::Value) -> String {
    report["evidence"]["verification"]["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["dimension"] == "format")
        .map(|d| d["status"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no format dimension: {report}"))
}

/// How many of `hspi verify --audits N --json`'s audits named `value` as nearest on `dimension`
/// (`unseen`: a format no reference covers).
pub fn named(verify: &serde_json::Value, dimension: &str, value: &str) -> u64 {
    verify["nearest"]
        .as_array()
        .expect("a verify tally names the nearest values")
        .iter()
        .find(|d| d[0] == dimension)
        .and_then(|d| d[1][value].as_u64())
        .unwrap_or(0)
}

/// How many of `hspi verify --audits N --json`'s audits gave `status` on `dimension`.
pub fn tally(verify: &serde_json::Value, dimension: &str, status: &str) -> u64 {
    verify["dimensions"]
        .as_array()
        .expect("a verify tally has dimensions")
        .iter()
        .find(|d| d[0] == dimension)
        .and_then(|d| d[1][status].as_u64())
        .unwrap_or(0)
}

/// Held by a test that should not share the two cores with another of its file's tests: each
/// starts servers of two threads (llama-server `-t 2`, vLLM's OpenMP), and four such threads on
/// two cores spin at their barriers (`tests/gemma3.rs`: 454 s with its four tests two at a time,
/// 342 s one at a time, measured 2026-11-27). A test that failed while holding it leaves it usable.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static CORES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    CORES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub fn hspi() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hspi"));
    c.env_remove("RUST_BACKTRACE").env("NO_COLOR", "1");
    c
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// `hspi ARGS…`, its wall time logged (shown with `--nocapture` or on failure: where a slow
/// test spends its time).
pub fn run(args: &[&str]) -> Run {
    let started = std::time::Instant::now();
    let run = Run::from(hspi().args(args).output().expect("run hspi"));
    let shown: Vec<&str> = args.iter().take(3).copied().collect();
    eprintln!(
        "[{:.1} s] hspi {} …",
        started.elapsed().as_secs_f64(),
        shown.join(" ")
    );
    run
}

pub fn ok(args: &[&str]) -> Run {
    let r = run(args);
    assert_eq!(r.code, 0, "hspi {args:?} failed:\n{}", r.stderr);
    r
}

/// `hspi verify SERVED --claim CLAIM EXTRA…` with the shipped pack's classifier and references.
pub fn verify_with_shipped_pack(served: &Path, claim: &str, extra: &[&str]) -> Run {
    verify_with_pack(&shipped_pack(), served, claim, extra)
}

/// [`verify_with_shipped_pack`] with the pack at `pack`.
pub fn verify_with_pack(pack: &Path, served: &Path, claim: &str, extra: &[&str]) -> Run {
    let classifier = pack.join("classifier.json");
    let refs: Vec<String> = pack_references(pack)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut args = vec![
        "verify",
        served.to_str().unwrap(),
        "--classifier",
        classifier.to_str().unwrap(),
        "--claim",
        claim,
    ];
    args.extend(extra);
    args.push("--references");
    args.extend(refs.iter().map(String::as_str));
    run(&args)
}

/// `hspi eqc --json` over `dirs`: each class's members.
pub fn eqcs(dirs: &[&Path]) -> Vec<Vec<String>> {
    let mut args = vec!["eqc", "--json"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    let r = ok(&args);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    v["eqcs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// Records as (target, probe, output bytes), sorted: what must match between two collections.
pub fn record_set(dir: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut v: Vec<_> = hspi_datasets::Dataset::open(dir)
        .unwrap()
        .records()
        .unwrap()
        .into_iter()
        .map(|r| (r.target, r.probe_id, r.outputs.identity_bytes()))
        .collect();
    v.sort();
    v
}

pub fn collect_cnn(out: &Path, probes: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "collect",
        "--model",
        "cnn-digits",
        "--probes",
        probes,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// A PDF opens cleanly: poppler's `pdfinfo` and `pdftoppm` print nothing on stderr (their
/// syntax errors and warnings go there), and `qpdf --check` passes without a warning.
pub fn assert_pdf_opens_cleanly(pdf: &Path) {
    for (tool, args) in [
        ("pdfinfo", vec![]),
        ("pdftoppm", vec!["-png", "-r", "20"]),
        ("qpdf", vec!["--check"]),
    ] {
        let mut cmd = std::process::Command::new(tool);
        cmd.args(&args).arg(pdf);
        if tool == "pdftoppm" {
            cmd.arg(pdf.with_extension("check"));
        }
        let out = cmd.output().unwrap_or_else(|e| {
            panic!(
                "{tool} is not installed ({e}): run .ci/setup (it installs poppler-utils and qpdf)"
            )
        });
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(
            out.status.success(),
            "{tool} {}: {stdout}{stderr}",
            pdf.display()
        );
        assert!(
            stderr.trim().is_empty() && !stdout.contains("WARNING"),
            "{tool} {}: {stdout}{stderr}",
            pdf.display()
        );
    }
}
