//! `hspi watch` against three real llama-servers, all claiming F16 with the shipped SmolLM2 pack:
//! A serves F16 throughout, B Q8_0 throughout, C F16 until round 10 and is restarted at Q4_0 on
//! the same port after it. Over 30 rounds (with a kill -9 in the middle of the second stretch and
//! a rerun): A never flagged, B a format mismatch from round 1, C's change flagged within two
//! rounds and dated round 11, `--on-change` told once; the replay recomputes the same findings;
//! the comparison report passes the JSON schema, renders in headless Chromium, and its PDF pages
//! show the title first, charts with labelled axes, aligned tables and page numbers.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::llama::{gguf, start, LlamaServer};
use common::*;

const CLAIM: &str = "*/llamacpp/f16/*";

fn watch_args(dir: &Path, urls: &[(&str, String)], rounds: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "watch",
        "--pack",
        shipped_pack().to_str().unwrap(),
        "--claim",
        CLAIM,
        "--rounds",
        rounds,
        "--every",
        "0",
        "--seed",
        "2026",
        "--draw",
        "8",
        "--retries",
        "8",
        "--out",
        dir.to_str().unwrap(),
        "--on-change",
        &format!("cat >> {}", dir.join("changes.jsonl").display()),
    ]
    .map(String::from)
    .to_vec();
    for (name, url) in urls {
        args.push("--provider".into());
        args.push(format!("{name}={url}"));
    }
    args
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Per (round, provider): the format status and nearest value the round's audit found.
fn format_history(records: &[serde_json::Value]) -> Vec<(u64, String, String, String)> {
    let mut h: Vec<_> = records
        .iter()
        .map(|r| {
            let format = r["outcome"]["dimensions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["dimension"] == "format")
                .unwrap_or_else(|| panic!("no format verdict: {r}"));
            (
                r["round"].as_u64().unwrap(),
                r["provider"].as_str().unwrap().to_string(),
                format["status"].as_str().unwrap().to_string(),
                format["nearest"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    h.sort();
    h
}

fn changes(report: &serde_json::Value, provider: &str) -> Vec<(String, u64, u64)> {
    report["evidence"]["comparison"]["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == provider)
        .unwrap()["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["from"].is_null())
        .map(|c| {
            (
                c["dimension"].as_str().unwrap().to_string(),
                c["since_round"].as_u64().unwrap(),
                c["flagged_at_round"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn render(dir: &Path, format: &str, out: &Path) {
    ok(&[
        "report",
        "--from",
        dir.to_str().unwrap(),
        "--format",
        format,
        "--out",
        out.to_str().unwrap(),
    ]);
}

#[test]
fn three_providers_watched_over_thirty_rounds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("watch");
    let a = start("avx2", "F16");
    let b = start("avx2", "Q8_0");
    let c = start("avx2", "F16");
    let c_port = c.port();
    let urls = [
        ("A", a.chat_url()),
        ("B", b.chat_url()),
        ("C", c.chat_url()),
    ];

    // Rounds 1–10: C still serves F16.
    let first = run(&watch_args(&dir, &urls, "10")
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(first.code, 1, "B's mismatch: exit 1\n{}", first.stderr);

    // C restarted at Q4_0 behind the same URL.
    drop(c);
    let build = common::llama::build("avx2");
    let started = Instant::now();
    let _c = loop {
        match LlamaServer::start_on(&build, &gguf("Q4_0"), "smollm2", c_port) {
            Ok(s) => break s,
            Err(e) if started.elapsed() < Duration::from_secs(30) => {
                eprintln!("restarting C: {e}");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("C did not restart on port {c_port}: {e}"),
        }
    };

    // Rounds 11–30, killed with SIGKILL in the middle of an audit, then run again.
    let log = dir.join("rounds.jsonl");
    let args = watch_args(&dir, &urls, "30");
    let mut child = hspi()
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let waited = Instant::now();
    while lines(&log).len() < 50 {
        assert!(
            waited.elapsed() < Duration::from_secs(600),
            "the watch stalled"
        );
        assert!(child.try_wait().unwrap().is_none(), "the watch ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Inside the next audit: its dataset and journal are being written.
    std::thread::sleep(Duration::from_millis(700));
    Command::new("kill")
        .args(["-9", &child.id().to_string()])
        .status()
        .unwrap();
    child.wait().unwrap();
    let at_kill = lines(&log).len();
    assert!(
        (50..90).contains(&at_kill),
        "{at_kill} rounds logged at the kill"
    );
    let rerun = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(rerun.code, 1, "{}", rerun.stderr);
    assert!(
        rerun
            .stderr
            .contains(&format!("{at_kill} rounds logged already")),
        "{}",
        rerun.stderr
    );

    // The history: every provider once per round, as an uninterrupted watch of these servers
    // has it (their answers are deterministic).
    let records = lines(&log);
    assert_eq!(records.len(), 90);
    let keys: BTreeSet<(u64, String)> = records
        .iter()
        .map(|r| {
            (
                r["round"].as_u64().unwrap(),
                r["provider"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(keys.len(), 90, "no (round, provider) twice");
    let history = format_history(&records);
    for (round, provider, status, nearest) in &history {
        let expected = match (provider.as_str(), *round) {
            ("A", _) => ("consistent", "f16"),
            ("B", _) => ("mismatch", "q8_0"),
            ("C", r) if r <= 10 => ("consistent", "f16"),
            _ => ("mismatch", "q4_0"),
        };
        assert_eq!(status, expected.0, "round {round} {provider}: {nearest}");
        assert!(
            nearest.starts_with(expected.1),
            "round {round} {provider}: {nearest}"
        );
    }

    // Findings: C changed at round 11, flagged within two rounds; nothing on A or B.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("comparison.json")).unwrap())
            .unwrap();
    assert_eq!(changes(&report, "A"), []);
    assert_eq!(changes(&report, "B"), []);
    let c_changes = changes(&report, "C");
    assert_eq!(c_changes.len(), 1, "{c_changes:?}");
    let (dimension, since, flagged) = &c_changes[0];
    assert_eq!((dimension.as_str(), *since), ("format", 11));
    assert!(*flagged <= 12, "flagged at round {flagged}");
    assert_eq!(report["summary"]["verdict"], "mismatch");
    let told = lines(&dir.join("changes.jsonl"));
    assert_eq!(told.len(), 1, "--on-change runs once per change: {told:?}");
    assert_eq!(told[0]["provider"]["name"], "C");
    assert_eq!(told[0]["change"]["since_round"], 11);

    // The replay, deciding every stored round again with the pack: the same findings.
    let replayed = run(&[
        "watch",
        "--replay",
        dir.to_str().unwrap(),
        "--pack",
        shipped_pack().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(replayed.code, 1, "exit codes as audit: {}", replayed.stderr);
    let replayed: serde_json::Value = serde_json::from_str(&replayed.stdout).unwrap();
    for p in ["A", "B", "C"] {
        assert_eq!(changes(&replayed, p), changes(&report, p), "{p}");
    }
    assert_eq!(
        replayed["evidence"]["comparison"]["providers"],
        report["evidence"]["comparison"]["providers"]
    );

    check_reports(tmp.path(), &dir);
    total_budget_stops_the_watch(tmp.path(), &a.chat_url());

    // The whole watch (log, rounds, comparison) as a signed evidence bundle.
    let key = tmp.path().join("key");
    let bundle = tmp.path().join("bundle");
    ok(&["bundle", "keygen", "--out", key.to_str().unwrap()]);
    let (d, k, b) = (
        dir.to_str().unwrap(),
        key.to_str().unwrap(),
        bundle.to_str().unwrap(),
    );
    ok(&["bundle", "sign", d, "--key", k, "--out", b]);
    ok(&["bundle", "verify", b]);
}

/// A watch with a total budget of 5 requests, of A and of a provider that refuses connections:
/// the refusing provider's round is logged with no answer (the watch goes on), and the watch
/// stops before the budget is overrun, exiting 3 with every round kept.
fn total_budget_stops_the_watch(tmp: &Path, a: &str) {
    let dir = tmp.join("budget");
    let r = run(&[
        "watch",
        "--pack",
        shipped_pack().to_str().unwrap(),
        "--claim",
        CLAIM,
        "--provider",
        &format!("A={a}"),
        "--provider",
        "down=http://127.0.0.1:9/v1/chat/completions",
        "--rounds",
        "5",
        "--every",
        "0",
        "--retries",
        "0",
        "--total-max-requests",
        "5",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("total budget is spent"), "{}", r.stderr);
    let records = lines(&dir.join("rounds.jsonl"));
    let spent: u64 = records
        .iter()
        .map(|r| r["outcome"]["requests"].as_u64().unwrap())
        .sum();
    assert!(spent <= 5, "{spent} requests");
    assert!(records.len() < 10, "stopped early: {records:?}");
    // The refusing provider's round has no answer: an error, or (when the spending cap comes
    // before the third refused prompt) a verdict on none, inconclusive, with the failed
    // transport line.
    let down = records.iter().find(|r| r["provider"] == "down").unwrap();
    let o = &down["outcome"];
    assert!(
        o["error"].is_string() || (o["verdict"] == "inconclusive" && o["output_tokens"] == 0),
        "{down}"
    );
}

/// The comparison report as JSON (schema), HTML (Chromium) and PDF (poppler).
fn check_reports(tmp: &Path, dir: &Path) {
    let json = tmp.join("comparison.json");
    render(dir, "json", &json);
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/hspi-report-1.schema.json");
    let check = Command::new("python3")
        .args([
            "-c",
            "import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))",
        ])
        .arg(&json)
        .arg(&schema)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "the comparison does not pass the report schema (python3 jsonschema, from .ci/setup): {}",
        String::from_utf8_lossy(&check.stderr)
    );

    let html = tmp.join("comparison.html");
    render(dir, "html", &html);
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(
        page.matches("<svg").count(),
        3,
        "one time series per provider"
    );
    for label in ["claimed dimension", ">round<", "Providers side by side"] {
        assert!(page.contains(label), "{label}");
    }
    for external in ["src=", "href=", "url(", "<script", "<link", "@import"] {
        assert!(!page.contains(external), "the HTML references {external}");
    }
    let shot = tmp.join("shot.png");
    let out = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1000,1400",
        ])
        .arg(format!("--user-data-dir={}", tmp.join("chrome").display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read(&shot).unwrap().starts_with(b"\x89PNG"));

    let pdf = tmp.join("comparison.pdf");
    render(dir, "pdf", &pdf);
    assert_pdf_opens_cleanly(&pdf);
    let text = |args: &[&str]| {
        let out = Command::new("pdftotext")
            .args(args)
            .arg(&pdf)
            .arg("-")
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first_page = text(&["-f", "1", "-l", "1", "-layout"]);
    let first_line = first_page.lines().find(|l| !l.trim().is_empty()).unwrap();
    assert!(
        first_line
            .trim()
            .starts_with("hspi comparison: 3 providers"),
        "the title comes first: {first_line}"
    );
    // The side-by-side table's columns line up: in every provider row, the dimension cell starts
    // where the header's "dimension" does (word positions from pdftotext -bbox, in points).
    let coordinate = |l: &str, name: &str| -> Option<f64> {
        l.split(&format!("{name}=\""))
            .nth(1)?
            .split('"')
            .next()?
            .parse()
            .ok()
    };
    let words: Vec<(f64, f64, String)> = text(&["-f", "1", "-l", "1", "-bbox"])
        .lines()
        .filter_map(|l| {
            let w = l.split('>').nth(1)?.split('<').next()?.to_string();
            Some((coordinate(l, "xMin")?, coordinate(l, "yMin")?, w))
        })
        .collect();
    let (header_x, header_y, _) = words
        .iter()
        .find(|w| w.2 == "dimension")
        .expect("a table header");
    let cells: Vec<f64> = words
        .iter()
        .filter(|w| w.1 > *header_y && (w.2 == "format" || w.2 == "engine"))
        .map(|w| w.0)
        .collect();
    assert_eq!(cells.len(), 6, "two dimensions per provider: {words:?}");
    for x in cells {
        assert!(
            (x - header_x).abs() < 0.5,
            "column at {x} pt, header at {header_x} pt"
        );
    }
    let all = text(&["-layout"]);
    for label in [
        "round",
        "claimed dimension",
        "format",
        "Appendix A: evidence",
    ] {
        assert!(all.contains(label), "{label} in the PDF:\n{all}");
    }
    // Page numbers "n / total" at the foot of every page (pdftotext drops the thin spaces).
    let pages = all.matches('\u{c}').count();
    let squeezed: String = all.chars().filter(|c| *c != ' ').collect();
    for n in 1..=pages {
        assert!(
            squeezed.contains(&format!("{n}/{pages}")),
            "page {n} of {pages}:\n{all}"
        );
    }
    let prefix = tmp.join("page");
    let r = Command::new("pdftoppm")
        .args(["-png", "-r", "40"])
        .arg(&pdf)
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}
