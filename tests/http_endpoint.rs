//! Collection from endpoints: faults survived within budget, the journal replays, secrets never leak,
//! and `hspi serve` answers bit-identically.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::fake::{chat_answer, ok as reply, status, Behaviour, FakeEndpoint};
use common::*;

fn collect_http(url: &str, out: &std::path::Path, probes: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "collect",
        "--endpoint",
        url,
        "--model",
        "m",
        "--probes",
        probes,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn answers(n: u32) -> Vec<Behaviour> {
    (0..n).map(|i| reply(chat_answer("m", i))).collect()
}

#[test]
fn faults_are_retried_or_reported_and_the_budget_holds() {
    let mut script = vec![
        status(
            429,
            &[("Retry-After", "0.2")],
            r#"{"error":{"message":"slow down"}}"#,
        ),
        status(500, &[], "oops"),
        Behaviour::Reset,
        Behaviour::Slow(Duration::from_millis(2500), chat_answer("m", 99)),
        reply(r#"{"choices":[{"message":{"content":"trunc"#.into()),
    ];
    script.extend(answers(10));
    let server = FakeEndpoint::start(script, 40);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d");
    let r = collect_http(
        &server.url,
        &out,
        "3",
        &["--timeout", "1", "--retries", "5", "--max-requests", "12"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(record_set(&out).len(), 3);
    assert!(
        server.count() <= 12,
        "sent {} requests over a cap of 12",
        server.count()
    );
    assert!(r.stderr.contains("requests"), "{}", r.stderr);
}

#[test]
fn the_budget_cap_stops_cleanly_and_resume_pays_only_the_rest() {
    let server = FakeEndpoint::start(answers(20), 40);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d");
    let r = collect_http(&server.url, &out, "5", &["--max-requests", "3"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("budget reached") && r.stderr.contains("--resume"),
        "{}",
        r.stderr
    );
    assert_eq!(server.count(), 3);
    assert_eq!(record_set(&out).len(), 3, "what was paid for is kept");
    ok(&["dataset", "verify", out.to_str().unwrap()]);
    let r = collect_http(
        &server.url,
        &out,
        "5",
        &["--resume", "--max-requests", "10"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(server.count(), 5, "nothing paid twice");
    assert_eq!(record_set(&out).len(), 5);
}

#[test]
fn the_journal_replays_without_a_request() {
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("journal.jsonl");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let server = FakeEndpoint::start(answers(8), 8);
    let j = journal.to_str().unwrap();
    assert_eq!(
        collect_http(&server.url, &a, "4", &["--journal", j]).code,
        0
    );
    assert_eq!(server.count(), 4);
    let r = collect_http(&server.url, &b, "4", &["--journal", j]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(server.count(), 4, "replayed, not re-requested");
    assert_eq!(record_set(&a), record_set(&b));
}

#[test]
fn an_api_key_never_appears_in_files_or_output() {
    let secret = "sk-hspi-test-0123456789abcdef";
    let server = FakeEndpoint::start(
        vec![
            Behaviour::EchoAuth,
            reply(chat_answer("m", 1)),
            reply(chat_answer("m", 2)),
        ],
        10,
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d");
    let r = hspi()
        .env("HSPI_TEST_KEY", secret)
        .args([
            "collect",
            "--endpoint",
            &server.url,
            "--model",
            "m",
            "--probes",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--api-key-env",
            "HSPI_TEST_KEY",
            "--retries",
            "0",
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(!text.contains(secret), "key printed: {text}");
    assert!(
        server.requests.lock().unwrap()[0].contains(&format!("Bearer {secret}")),
        "the key was sent"
    );
    for entry in walk(tmp.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "key written to {}",
            entry.display()
        );
    }
    // The 401 is reported (not retried with a bad key) and names the endpoint.
    assert_eq!(r.status.code(), Some(2));
    assert!(text.contains("HTTP 401"), "{text}");
    let r = run(&[
        "collect",
        "--endpoint",
        &server.url,
        "--model",
        "m",
        "--probes",
        "1",
        "--out",
        tmp.path().join("e").to_str().unwrap(),
        "--api-key-env",
        "HSPI_UNSET_KEY_VAR",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("HSPI_UNSET_KEY_VAR") && r.stderr.contains("not set"),
        "{}",
        r.stderr
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn bad_answers_get_clear_errors_and_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let no_lp = FakeEndpoint::start(
        vec![reply(
            r#"{"model":"m","choices":[{"message":{"content":"hi"},"logprobs":null}]}"#.into(),
        )],
        4,
    );
    let r = collect_http(&no_lp.url, &tmp.path().join("a"), "1", &[]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("this endpoint returns no logprobs: only text-mode evidence is possible"),
        "{}",
        r.stderr
    );
    let r = collect_http(&no_lp.url, &tmp.path().join("a2"), "1", &["--text-only"]);
    assert_eq!(r.code, 0, "{}", r.stderr);

    let other = FakeEndpoint::start(vec![reply(chat_answer("other-model", 1))], 4);
    let r = collect_http(&other.url, &tmp.path().join("b"), "1", &[]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("asked for model 'm' but the endpoint answered as 'other-model'"),
        "{}",
        r.stderr
    );

    let html = FakeEndpoint::start(
        vec![status(200, &[], "<html><body>Gateway</body></html>")],
        10,
    );
    let r = collect_http(&html.url, &tmp.path().join("c"), "1", &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("HTML page"), "{}", r.stderr);

    // Two answers land, then the server goes away: the two are kept, the error names the endpoint.
    let dying = FakeEndpoint::start(answers(2), 2);
    let out = tmp.path().join("d");
    let r = collect_http(&dying.url, &out, "4", &["--retries", "1"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("cannot connect") || r.stderr.contains("failed"),
        "{}",
        r.stderr
    );
    assert_eq!(record_set(&out).len(), 2);
}

use common::serve::serve;

#[test]
fn hspi_serve_answers_both_apis_bit_identically_and_formats_differ() {
    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let bf16 = serve(&format!("{isa}/candle-0.11.1/bf16/bs1"));
    let f32s = serve(&format!("{isa}/candle-0.11.1/f32/bs1"));
    let tmp = tempfile::tempdir().unwrap();
    let probes = tmp.path().join("p.json");
    ok(&[
        "probe",
        "prompts",
        "--count",
        "5",
        "--out",
        probes.to_str().unwrap(),
    ]);
    let p = probes.to_str().unwrap();
    let coll = |base: &str, api: &str, dir: &str| {
        let url = format!("{base}/{api}");
        let out = tmp.path().join(dir);
        let r = run(&[
            "collect",
            "--endpoint",
            &url,
            "--model",
            "tiny-lm",
            "--probes",
            p,
            "--out",
            out.to_str().unwrap(),
            "--concurrency",
            "3",
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        out
    };
    let a = coll(&bf16.1, "chat/completions", "a");
    let b = coll(&bf16.1, "chat/completions", "b");
    let c = coll(&bf16.1, "completions", "c");
    let f = coll(&f32s.1, "chat/completions", "f");
    let strip = |d: &std::path::Path| {
        record_set(d)
            .into_iter()
            .map(|(_, p, o)| (p, o))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&a), strip(&b), "repeated collection is bit-identical");
    assert_eq!(strip(&a).len(), 5);
    assert_eq!(record_set(&c).len(), 5);
    assert_ne!(strip(&a), strip(&f), "bf16 and f32 serve different bits");
    let recs = hspi_datasets::Dataset::open(&a).unwrap().records().unwrap();
    let hspi_datasets::Outputs::Completion { steps, .. } = &recs[0].outputs else {
        panic!()
    };
    assert_eq!(steps.len(), 8);
    assert!(steps
        .iter()
        .all(|s| s.logprob.as_ref().unwrap().exact_f32 && s.top.len() == 5));
    // Each record keeps how its prompt was asked, as the API shape asked it.
    let asked = |d: &std::path::Path| {
        let recs = hspi_datasets::Dataset::open(d).unwrap().records().unwrap();
        recs.iter().map(|r| r.asked_as).collect::<Vec<_>>()
    };
    use hspi_datasets::AskedAs;
    assert!(asked(&a).iter().all(|x| *x == Some(AskedAs::ChatTemplate)));
    assert!(asked(&c).iter().all(|x| *x == Some(AskedAs::RawPrompt)));
}

#[test]
fn sigkill_during_http_collection_then_resume_loses_and_repeats_nothing() {
    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let server = serve(&format!("{isa}/candle-0.11.1/f16/bs1"));
    let url = format!("{}/chat/completions", server.1);
    let tmp = tempfile::tempdir().unwrap();
    let (whole, killed) = (tmp.path().join("whole"), tmp.path().join("killed"));
    let args = |out: &std::path::Path| -> Vec<String> {
        [
            "collect",
            "--endpoint",
            &url,
            "--model",
            "tiny-lm",
            "--probes",
            "120",
            "--out",
            out.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    assert_eq!(hspi().args(args(&whole)).status().unwrap().code(), Some(0));
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20);
    let mut kills = 0;
    for attempt in 0..40 {
        if kills == 20 {
            break;
        }
        let mut a = args(&killed);
        if attempt > 0 {
            a.push("--resume".into());
        }
        let mut child = hspi().args(a).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.random_range(10..120)));
        if child.try_wait().unwrap().is_some() {
            break;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
    }
    let mut a = args(&killed);
    a.push("--resume".into());
    assert_eq!(hspi().args(a).status().unwrap().code(), Some(0));
    assert_eq!(kills, 20, "only {kills} kills landed");
    assert_eq!(record_set(&whole), record_set(&killed));
}
