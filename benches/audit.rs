//! The audit benchmarks on the real llama.cpp peer (needs `.ci/setup`'s llama.cpp build and
//! SmolLM2 quants): `cargo bench --bench audit`. Prints a table and JSON of
//!  1. query efficiency: output tokens to a ≥ 99 %-correct verdict, hspi's sequential verifier
//!     against a two-sample MMD test with a Hamming kernel over the generated text ("Model
//!     Equality Testing"), on the same answers;
//!  2. collector overhead: `hspi collect` against a bare client sending the same requests to the
//!     same llama-server;
//!  3. training: hspi's classifier against scikit-learn's LogisticRegression on the same features;
//!  4. per evidence mode (exact, rounded to fp16 or 4 decimals, text only): requests and output
//!     tokens to a verdict when F16 is claimed and Q8_0 or Q4_0 served;
//!  5. the one-command audit (`hspi audit --pack`, the shipped SmolLM2 pack) on loopback: wall
//!     time of the whole command (pack check, draw, queries, contract checks, report files);
//!  6. per format pair across engines: output tokens to a format verdict when engines none of us
//!     wrote (vLLM, PyTorch serving llm-compressor's checkpoints; their committed atlases) serve
//!     one format and a router word is claimed, audited with the shipped pack;
//!  7. the fresh-prompt audit (`hspi audit --weights`): its wall time, and the references' cost
//!     per audited token against a llama-server computing the same references (`audit/fresh.rs`;
//!     `cargo bench --bench audit -- fresh` runs it alone).
//!
//! Border-probe time per EQC pair has its own bench: `cargo bench -p hspi-collect --bench border_pair`.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "audit/fresh.rs"]
mod fresh;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::llama::start;
use common::{atlas, audits_over, ok, shipped_pack, shipped_references, tally};
use hspi_classify::verify::{Verifier, VerifyParams};
use hspi_classify::{run_audit, RecordSource};
use hspi_classify::{PlatformModel, ReferenceIndex};
use hspi_datasets::{Dataset, Outputs, Presentation, Record};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const FORMATS: [&str; 4] = ["F32", "F16", "Q8_0", "Q4_0"];
const TRIALS: u64 = 50;
/// (atlas, served variant, router word claimed, the verdict it should reach) for bench 6.
const FORMAT_PAIRS: [(&str, &str, &str, &str); 14] = [
    ("vllm-cpu", "bf16", "bf16", "consistent"),
    ("vllm-cpu", "bf16", "fp16", "mismatch"),
    ("vllm-cpu", "int8-w8a8", "int8", "consistent"),
    ("vllm-cpu", "int8-w8a8", "bf16", "mismatch"),
    ("transformers-compressed", "bf16", "bf16", "consistent"),
    ("transformers-compressed", "bf16", "fp16", "mismatch"),
    ("transformers-compressed", "fp8-w8a8", "fp8", "consistent"),
    ("transformers-compressed", "fp8-w8a8", "bf16", "mismatch"),
    ("transformers-compressed", "int8-w8a8", "int8", "consistent"),
    (
        "transformers-compressed",
        "int4-w4a16-g64",
        "int4",
        "consistent",
    ),
    (
        "transformers-compressed",
        "int4-w4a16-g64",
        "int8",
        "mismatch",
    ),
    ("transformers-compressed", "nvfp4-a16", "fp4", "consistent"),
    ("transformers-compressed", "nvfp4-a16", "fp8", "mismatch"),
    ("transformers-compressed", "nvfp4-a16", "int4", "mismatch"),
];

/// What the provider's endpoint shows: each mode's requests and tokens to a verdict.
const MODES: [&str; 4] = ["exact", "rounded:fp16", "rounded:4dp", "text-only"];

/// Bench 6: each format pair's count of audits reaching its verdict and the output tokens they
/// took (`hspi verify --audits`, the shipped pack's classifier and references).
fn format_pairs() -> Vec<serde_json::Value> {
    let classifier = shipped_pack().join("classifier.json");
    let refs: Vec<String> = shipped_references()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    FORMAT_PAIRS
        .iter()
        .map(|(dir, variant, claim, expected)| {
            let served = ["train", "unseen"].map(|s| atlas(dir).join(format!("{variant}-{s}")));
            let pattern = format!("*/*/{claim}/*");
            let t = audits_over(TRIALS, &classifier, &refs, &served, &pattern, 256);
            serde_json::json!({
                "engine": dir, "served": variant, "claimed": claim, "expected": expected,
                "audits": TRIALS, "reached": tally(&t, "format", expected),
                "tokens_mean": t["mean_output_tokens"], "tokens_max": t["max_output_tokens"],
            })
        })
        .collect()
}

fn label(quant: &str) -> String {
    format!(
        "cpu-{}/llamacpp-11434/{}/bs1",
        hspi_datasets::provenance::isa_path(),
        quant.to_lowercase()
    )
}

fn collect(url: &str, quant: &str, probes: &Path, out: &Path) -> f64 {
    let started = Instant::now();
    ok(&[
        "collect",
        "--endpoint",
        url,
        "--model",
        "smollm2",
        "--probes",
        probes.to_str().unwrap(),
        "--label",
        &label(quant),
        "--out",
        out.to_str().unwrap(),
        "--force",
    ]);
    started.elapsed().as_secs_f64()
}

/// Wall time of five one-command audits of `base` (serving `quant`) with the shipped pack, each
/// a fresh draw into a directory of its own.
fn pack_audit_seconds(base: &str, quant: &str, tmp: &Path) -> Vec<f64> {
    let pack = common::shipped_pack();
    (0..5)
        .map(|i| {
            let out = tmp.join(format!("pack-audit-{quant}-{i}"));
            let started = Instant::now();
            let (code, _, stderr) = common::pack_audit(&pack, base, "*/llamacpp/f16/*", &out, &[]);
            assert!(code == 0 || code == 1, "{stderr}");
            started.elapsed().as_secs_f64()
        })
        .collect()
}

/// The same requests as a collection, sent by a bare client (bodies read from its journal).
fn bare_client(url: &str, journal: &Path) -> f64 {
    let bodies: Vec<String> = std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["request"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let client = reqwest::blocking::Client::new();
    let started = Instant::now();
    for b in bodies {
        let r = client
            .post(url)
            .header("content-type", "application/json")
            .body(b)
            .send()
            .unwrap();
        assert!(r.status().is_success());
        let _ = r.bytes().unwrap();
    }
    started.elapsed().as_secs_f64()
}

fn records(dir: &Path) -> Vec<Record> {
    Dataset::open(dir).unwrap().records().unwrap()
}

fn tokens(r: &Record) -> Vec<String> {
    match &r.outputs {
        Outputs::Completion { steps, .. } => steps.iter().map(|s| s.token.clone()).collect(),
        _ => Vec::new(),
    }
}

/// Normalised Hamming similarity of two token sequences.
fn hamming(a: &[String], b: &[String]) -> f64 {
    let n = a.len().max(b.len()).max(1);
    a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / n as f64
}

fn mmd2(x: &[&Vec<String>], y: &[&Vec<String>]) -> f64 {
    let mean = |a: &[&Vec<String>], b: &[&Vec<String>], same: bool| {
        let (mut s, mut n) = (0.0, 0usize);
        for (i, p) in a.iter().enumerate() {
            for (j, q) in b.iter().enumerate() {
                if same && i == j {
                    continue;
                }
                s += hamming(p, q);
                n += 1;
            }
        }
        s / n.max(1) as f64
    };
    mean(x, x, true) + mean(y, y, true) - 2.0 * mean(x, y, false)
}

/// Permutation test of MMD² (200 permutations): does the served sample differ from the claimed?
fn mmd_rejects(x: &[&Vec<String>], y: &[&Vec<String>], rng: &mut ChaCha8Rng) -> bool {
    if x.len() < 2 {
        return false;
    }
    let observed = mmd2(x, y);
    let mut pooled: Vec<&Vec<String>> = x.iter().chain(y).copied().collect();
    let mut above = 0;
    for _ in 0..200 {
        pooled.shuffle(rng);
        let (a, b) = pooled.split_at(x.len());
        above += usize::from(mmd2(a, b) >= observed);
    }
    (above as f64 + 1.0) / 201.0 < 0.01
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    if std::env::args().any(|a| a == "fresh") {
        println!("{}", fresh::run(t));
        return;
    }
    let (train_p, test_p) = (t.join("train.json"), t.join("test.json"));
    for (seed, file) in [("1", &train_p), ("2", &test_p)] {
        let f = file.to_str().unwrap();
        ok(&[
            "probe", "prompts", "--count", "40", "--seed", seed, "--out", f,
        ]);
    }

    let (mut train_dirs, mut test_dirs) = (Vec::<PathBuf>::new(), Vec::<PathBuf>::new());
    let (mut hspi_s, mut bare_s) = (Vec::new(), Vec::new());
    let mut pack_audits = Vec::new();
    for q in FORMATS {
        let server = start("avx2", q);
        let url = format!("{}/v1/chat/completions", server.url);
        collect(&url, q, &train_p, &t.join(format!("train-{q}")));
        // Alternate the two clients over the same requests; keep the best of three each.
        let test = t.join(format!("test-{q}"));
        let mut best = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            best.0 = best.0.min(collect(&url, q, &test_p, &test));
            best.1 = best.1.min(bare_client(&url, &test.join("journal.jsonl")));
        }
        hspi_s.push(best.0);
        bare_s.push(best.1);
        if q == "F16" || q == "Q8_0" {
            pack_audits.push((q, pack_audit_seconds(&server.url, q, t)));
        }
        train_dirs.push(t.join(format!("train-{q}")));
        test_dirs.push(test);
    }
    let overhead = hspi_s.iter().sum::<f64>() / bare_s.iter().sum::<f64>();

    // 1. Query efficiency.
    let model_path = t.join("model.json");
    let mut args = vec![
        "train".to_string(),
        "-o".into(),
        model_path.to_str().unwrap().into(),
    ];
    args.extend(train_dirs.iter().map(|d| d.to_str().unwrap().to_string()));
    ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let model = PlatformModel::load(&model_path).unwrap();
    let refs_records: Vec<Record> = test_dirs.iter().flat_map(|d| records(d)).collect();
    let refs = ReferenceIndex::new(&refs_records);
    let claimed = records(&test_dirs[1]); // F16
    let (mut rows, mut modes) = (Vec::new(), Vec::new());
    for (served_q, dir) in [("Q8_0", &test_dirs[2]), ("Q4_0", &test_dirs[3])] {
        let served = records(dir);
        // Per evidence mode: the provider's answers shown as such an endpoint shows them.
        for shown in MODES {
            let shown: Presentation = shown.parse().unwrap();
            let served: Vec<Record> = served
                .iter()
                .map(|r| Record {
                    outputs: shown.show(&r.outputs),
                    ..r.clone()
                })
                .collect();
            let (mut right, mut tokens_sum, mut tokens_max, mut queries) = (0u64, 0u64, 0u64, 0);
            for seed in 0..TRIALS {
                let mut order: Vec<&Record> = served.iter().collect();
                order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
                let params = VerifyParams {
                    max_output_tokens: 320,
                    max_queries: 40,
                    ..Default::default()
                };
                let claim = "*/llamacpp/f16/*".parse().unwrap();
                let v = Verifier::new(&model, &refs, claim, params).unwrap();
                let order: Vec<Record> = order.into_iter().cloned().collect();
                let mut source = RecordSource::in_order(&order, 8).unwrap();
                let report = run_audit(v, &mut source, &mut |_, _| Ok(()))
                    .unwrap()
                    .report;
                right += u64::from(report.verdict.name() == "mismatch");
                tokens_sum += report.output_tokens;
                tokens_max = tokens_max.max(report.output_tokens);
                queries += report.queries;
            }
            let mean = |v: f64| v / TRIALS as f64;
            modes.push((
                shown,
                served_q,
                right,
                mean(tokens_sum as f64),
                tokens_max,
                mean(queries as f64),
            ));
        }
        let exact = modes.iter().rev().find(|m| m.0 == Presentation::Exact);
        let (right, tokens_mean, tokens_max) = exact.map_or((0, 0.0, 0), |m| (m.2, m.3, m.4));
        // MMD: the smallest prompt count at which ≥ 99 % of random prompt subsets reject.
        let by_probe = |recs: &[Record]| -> std::collections::HashMap<String, Vec<String>> {
            recs.iter()
                .map(|r| (r.probe_id.clone(), tokens(r)))
                .collect()
        };
        let (s_map, c_map) = (by_probe(&served), by_probe(&claimed));
        let probes: Vec<String> = s_map.keys().cloned().collect();
        let mut mmd_tokens = None;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for n in [2usize, 4, 8, 16, 24, 32, 40] {
            let mut rejected = 0;
            for _ in 0..TRIALS {
                let mut pick = probes.clone();
                pick.shuffle(&mut rng);
                pick.truncate(n);
                let x: Vec<&Vec<String>> = pick.iter().map(|p| &s_map[p]).collect();
                let y: Vec<&Vec<String>> = pick.iter().map(|p| &c_map[p]).collect();
                rejected += usize::from(mmd_rejects(&x, &y, &mut rng));
            }
            if rejected as f64 >= 0.99 * TRIALS as f64 {
                mmd_tokens = Some(n as u64 * 8);
                break;
            }
        }
        rows.push((served_q, right, tokens_mean, tokens_max, mmd_tokens));
    }

    // 3. Training against scikit-learn on the same features (bits of the top-5 logprobs).
    let train_records: Vec<Record> = train_dirs.iter().flat_map(|d| records(d)).collect();
    let test_records: Vec<Record> = test_dirs.iter().flat_map(|d| records(d)).collect();
    let kinds = vec![hspi_classify::features::FeatureKind::Bits];
    let tr: Vec<&Record> = train_records.iter().collect();
    let te: Vec<&Record> = test_records.iter().collect();
    let spec = hspi_classify::references::infer_spec(kinds, &tr, Vec::new());
    let empty = ReferenceIndex::default();
    let (xtr, xte) = (
        hspi_classify::references::feature_matrix(&spec, &tr, &empty),
        hspi_classify::references::feature_matrix(&spec, &te, &empty),
    );
    let label_of = |r: &Record| {
        FORMATS
            .iter()
            .position(|q| r.platform.as_ref().unwrap().to_string() == label(q))
            .unwrap()
    };
    let (ytr, yte): (Vec<usize>, Vec<usize>) = (
        tr.iter().map(|r| label_of(r)).collect(),
        te.iter().map(|r| label_of(r)).collect(),
    );
    let groups: Vec<String> = tr.iter().map(|r| r.probe_id.clone()).collect();
    let started = Instant::now();
    let (m, _) = hspi_classify::linear::train(&xtr, &ytr, &groups, 4, &Default::default()).unwrap();
    let hspi_train_s = started.elapsed().as_secs_f64();
    let hspi_acc = xte
        .rows()
        .into_iter()
        .zip(&yte)
        .filter(|(row, y)| {
            hspi_datasets::top_label(&m.log_proba(&row.to_vec())).unwrap_or(0) == **y
        })
        .count() as f64
        / yte.len() as f64;
    let write = |path: &Path, x: &ndarray::Array2<f64>, y: &[usize]| {
        let mut s = String::new();
        for (row, label) in x.rows().into_iter().zip(y) {
            let cells: Vec<String> = row.iter().map(|v| v.to_string()).collect();
            s.push_str(&format!("{label},{}\n", cells.join(",")));
        }
        std::fs::write(path, s).unwrap();
    };
    write(&t.join("train.csv"), &xtr, &ytr);
    write(&t.join("test.csv"), &xte, &yte);
    let groups_file = t.join("groups.txt");
    std::fs::write(&groups_file, groups.join("\n")).unwrap();
    let script = r#"
import json, sys, time
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
d = sys.argv[1]
tr = np.loadtxt(d + "/train.csv", delimiter=","); te = np.loadtxt(d + "/test.csv", delimiter=",")
groups = open(d + "/groups.txt").read().split("\n")
t0 = time.time()
pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200))
grid = GridSearchCV(pipe, {"logisticregression__C": [100, 10, 1, 0.1]}, cv=GroupKFold(5))
grid.fit(tr[:, 1:], tr[:, 0], groups=groups)
secs = time.time() - t0
print(json.dumps({"seconds": secs, "accuracy": float((grid.predict(te[:, 1:]) == te[:, 0]).mean())}))
"#;
    let py = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(t)
        .output()
        .unwrap();
    let sk: serde_json::Value = serde_json::from_slice(&py.stdout).unwrap_or_else(|_| {
        panic!(
            "scikit-learn run failed: {}",
            String::from_utf8_lossy(&py.stderr)
        )
    });

    println!("| benchmark | hspi | baseline | ratio / note |");
    println!("|---|---|---|---|");
    for (q, right, mean, max, mmd) in &rows {
        println!(
            "| tokens to a verdict, F16 claimed, {q} served | {mean:.1} mean, {max} max ({right}/{TRIALS} right) | MMD (Hamming): {} | |",
            mmd.map_or("not reached within 320 tokens".to_string(), |t| format!("{t} tokens for 99 % rejection"))
        );
    }
    for (shown, q, right, mean, max, queries) in &modes {
        println!(
            "| evidence mode {shown}, F16 claimed, {q} served | {mean:.1} tokens mean, {max} max, {queries:.1} requests mean ({right}/{TRIALS} right) | | |"
        );
    }
    for (q, secs) in &pack_audits {
        let mut sorted = secs.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "| one-command audit (`hspi audit --pack`), F16 claimed, {q} served, loopback | {:.2} s median, {:.2} s best of {} | | |",
            sorted[sorted.len() / 2],
            sorted[0],
            sorted.len()
        );
    }
    println!(
        "| collector wall time, 4 x 40 prompts | {:.2} s | bare client {:.2} s | {overhead:.3} |",
        hspi_s.iter().sum::<f64>(),
        bare_s.iter().sum::<f64>()
    );
    println!(
        "| training, {} x {} bit features | {hspi_train_s:.2} s, {:.1} % test | scikit-learn {:.2} s, {:.1} % test | |",
        xtr.nrows(),
        xtr.ncols(),
        hspi_acc * 100.0,
        sk["seconds"].as_f64().unwrap_or(f64::NAN),
        sk["accuracy"].as_f64().unwrap_or(f64::NAN) * 100.0
    );
    let pairs = format_pairs();
    let fresh = fresh::run(t);
    println!("\n| engine | served | claimed | verdict expected | reached in {TRIALS} audits | output tokens, mean (max) |\n| --- | --- | --- | --- | --- | --- |");
    for p in &pairs {
        println!(
            "| {} | {} | {} | {} | {} | {:.1} ({}) |",
            p["engine"].as_str().unwrap(),
            p["served"].as_str().unwrap(),
            p["claimed"].as_str().unwrap(),
            p["expected"].as_str().unwrap(),
            p["reached"],
            p["tokens_mean"].as_f64().unwrap_or(f64::NAN),
            p["tokens_max"]
        );
    }
    println!(
        "{}",
        serde_json::json!({
            "format_pairs": pairs,
            "query_efficiency": rows.iter().map(|(q, right, mean, max, mmd)| serde_json::json!({
                "served": q, "claimed": "F16", "trials": TRIALS, "verifier_right": right,
                "verifier_tokens_mean": mean, "verifier_tokens_max": max, "mmd_tokens_99": mmd,
            })).collect::<Vec<_>>(),
            "evidence_modes": modes.iter().map(|(shown, q, right, mean, max, queries)| serde_json::json!({
                "shown": shown.to_string(), "served": q, "claimed": "F16", "trials": TRIALS,
                "right": right, "tokens_mean": mean, "tokens_max": max, "requests_mean": queries,
            })).collect::<Vec<_>>(),
            "pack_audit_s": pack_audits.iter().map(|(q, s)| serde_json::json!({"served": q, "seconds": s})).collect::<Vec<_>>(),
            "collector": {"hspi_s": hspi_s, "bare_s": bare_s, "ratio": overhead},
            "training": {"hspi_s": hspi_train_s, "hspi_accuracy": hspi_acc, "sklearn": sk,
                          "samples": xtr.nrows(), "features": xtr.ncols()},
            "fresh_prompts": fresh,
        })
    );
}
