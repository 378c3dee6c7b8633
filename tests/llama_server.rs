//! The real peer: llama.cpp's llama-server (built by .ci/setup from the PyPI sdist) serving SmolLM2
//! at F32, F16, Q8_0 and Q4_0. Each format is its own EQC, repeated collection is bit-identical,
//! and the journal replays without a request.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::llama::{collect_with, start, VERSION};
use common::proxy::Proxy;
use common::*;

fn collect(
    base: &str,
    label: &str,
    probes: &str,
    out: &std::path::Path,
    journal: Option<&std::path::Path>,
) -> Run {
    match journal {
        Some(j) => collect_with(
            base,
            label,
            probes,
            out,
            &["--journal", j.to_str().unwrap()],
        ),
        None => collect_with(base, label, probes, out, &[]),
    }
}

#[test]
fn each_llama_cpp_format_is_its_own_class_and_collection_repeats_bit_for_bit() {
    let tmp = tempfile::tempdir().unwrap();
    let probes = tmp.path().join("prompts.json");
    let unseen = tmp.path().join("unseen.json");
    for (file, count, seed) in [(&probes, "40", "1"), (&unseen, "20", "2")] {
        ok(&[
            "probe",
            "prompts",
            "--count",
            count,
            "--seed",
            seed,
            "--max-tokens",
            "8",
            "--top-logprobs",
            "5",
            "--out",
            file.to_str().unwrap(),
        ]);
    }
    let p = probes.to_str().unwrap();
    let mut unseen_dirs = Vec::new();
    let (mut load_train, mut load_unseen) = (Vec::new(), Vec::new());
    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let mut dirs = Vec::new();
    for quant in ["F32", "F16", "Q8_0", "Q4_0"] {
        let server = start("avx2", quant);
        if quant == "F32" {
            // Every shape llama-server speaks takes a fresh audit's seed (above 2^63).
            let sent = shapes::every_shape_answers(&server.url, "smollm2", "llama-server");
            assert_eq!(sent, ["chat", "completions"]);
        }
        let label = format!(
            "{isa}/llamacpp-{}/{}/bs1",
            VERSION.split('.').next().unwrap(),
            quant.to_lowercase()
        );
        let out = tmp.path().join(quant);
        let journal = tmp.path().join(format!("{quant}.journal"));
        let r = collect(&server.url, &label, p, &out, Some(&journal));
        assert_eq!(r.code, 0, "{quant}: {}", r.stderr);
        let test_out = tmp.path().join(format!("{quant}-unseen"));
        let r = collect(
            &server.url,
            &label,
            unseen.to_str().unwrap(),
            &test_out,
            None,
        );
        assert_eq!(r.code, 0, "{quant}: {}", r.stderr);
        unseen_dirs.push(test_out);
        // Under concurrent load the server batches requests: a platform of its own (bs4).
        let loaded = label.replace("/bs1", "/bs4");
        for (name, file, list) in [
            ("train", p, &mut load_train),
            ("unseen", unseen.to_str().unwrap(), &mut load_unseen),
        ] {
            let out = tmp.path().join(format!("{quant}-load-{name}"));
            let r = collect_with(&server.url, &loaded, file, &out, &["--concurrency", "4"]);
            assert_eq!(r.code, 0, "{quant} under load: {}", r.stderr);
            list.push(out);
        }
        if quant == "Q8_0" {
            // Repeated collection from the same server: the same bits.
            let again = tmp.path().join("Q8_0-again");
            assert_eq!(collect(&server.url, &label, p, &again, None).code, 0);
            let strip = |d: &std::path::Path| {
                record_set(d)
                    .into_iter()
                    .map(|(_, p, o)| (p, o))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                strip(&out),
                strip(&again),
                "llama-server repeats itself bit for bit"
            );
            let base = server.url.clone();
            drop(server);
            // The journal replays with the server gone (the same URL now refuses connections).
            let replay = tmp.path().join("Q8_0-replay");
            let r = collect(&base, &label, p, &replay, Some(&journal));
            assert_eq!(r.code, 0, "replay needed a request: {}", r.stderr);
            assert_eq!(record_set(&out), record_set(&replay));
        }
        dirs.push(out);
    }
    let mut args = vec!["eqc", "--json"];
    let names: Vec<String> = dirs
        .iter()
        .map(|d| d.to_str().unwrap().to_string())
        .collect();
    args.extend(names.iter().map(String::as_str));
    let eqc: serde_json::Value = serde_json::from_str(&ok(&args).stdout).unwrap();
    assert_eq!(eqc["platforms"], 4);
    assert_eq!(
        eqc["eqcs"].as_array().unwrap().len(),
        4,
        "F32, F16, Q8_0 and Q4_0 each form a class: {eqc}"
    );

    // Border prompts: prompts on which two formats' greedy generations diverge.
    let border = tmp.path().join("border-prompts.json");
    let mut args = vec![
        "probe",
        "border-prompts",
        "--json",
        "--out",
        border.to_str().unwrap(),
    ];
    args.extend(names.iter().map(String::as_str));
    let report: serde_json::Value = serde_json::from_str(&ok(&args).stdout).unwrap();
    eprintln!(
        "border prompts: {} of {} format pairs",
        report["found"], report["pairs"]
    );
    assert!(
        report["found"].as_u64().unwrap() >= 3,
        "border prompts for fewer than half the pairs: {report}"
    );

    black_box_classification(tmp.path(), &dirs, &unseen_dirs);
    verification(
        tmp.path(),
        [&dirs, &load_train],
        [&unseen_dirs, &load_unseen],
        &unseen,
    );

    // Two builds on one machine: the bits differ by the build's kernels, whatever the CPU model.
    if common::llama::runs_avx512_build() {
        let server = start("avx512", "F16");
        let out = tmp.path().join("F16-avx512");
        let r = collect(
            &server.url,
            "cpu-avx512/llamacpp-11434/f16/bs1",
            p,
            &out,
            None,
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let strip = |d: &std::path::Path| {
            record_set(d)
                .into_iter()
                .map(|(_, p, o)| (p, o))
                .collect::<Vec<_>>()
        };
        assert_ne!(
            strip(&out),
            strip(&tmp.path().join("F16")),
            "the AVX-512 build answers with other bits"
        );
    } else {
        eprintln!("note: this CPU has no AVX-512; the AVX-512 llama.cpp class was not exercised");
    }
}

fn accuracy_at(scores: &serde_json::Value, n: u64) -> f64 {
    scores["by_queries"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0] == n)
        .map(|p| p[1].as_f64().unwrap())
        .unwrap()
}

/// Black-box identification from top-5 logprobs on prompts never seen in training, against
/// hspi's own recomputation of those prompts (here: the local llama-server runs).
fn black_box_classification(tmp: &std::path::Path, train: &[PathBuf], test: &[PathBuf]) {
    let s = |d: &[PathBuf]| {
        d.iter()
            .map(|p| p.to_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let (train_s, test_s) = (s(train), s(test));
    let eval = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["eval", "--json", "--queries", "1,2,4,8", "--train"];
        args.extend(train_s.iter().map(String::as_str));
        args.push("--test");
        args.extend(test_s.iter().map(String::as_str));
        args.extend_from_slice(extra);
        serde_json::from_str(&ok(&args).stdout).unwrap()
    };
    let report = eval(&[]);
    assert_eq!(report["test_probes_seen"], 0);
    let (hspi, baseline) = (&report["hspi"], &report["baseline"]);
    eprintln!(
        "black-box, 4 references: {:.3} at 1 query; HSPI sign/exponent/mantissa baseline {:.3} (chance 0.25)",
        accuracy_at(hspi, 1),
        accuracy_at(baseline, 1)
    );
    assert!(accuracy_at(hspi, 1) >= 0.95, "{report}");
    assert_eq!(report["exact_replay"][0], report["exact_replay"][1]);
    for h in report["held_out"].as_array().unwrap() {
        let flagged = h["flagged_unknown"][0][1].as_f64().unwrap();
        assert!(
            flagged >= 0.95,
            "held-out {} flagged unknown {flagged}",
            h["name"]
        );
    }
    assert!(report["known_flagged_unknown"][0][1].as_f64().unwrap() <= 0.05);

    // Formats hspi does not recompute (standing in for builds it cannot run, like AVX-512):
    // described relative to the F32 reference alone, they are still told apart.
    let f32_only = eval(&[
        "--reference-platforms",
        "cpu-avx2/llamacpp-11434/f32/bs1",
        "--held-out",
        "0",
    ]);
    eprintln!(
        "black-box, F32 reference only: {:.3} at 1 query, {:.3} at 4, {:.3} at 8",
        accuracy_at(&f32_only["hspi"], 1),
        accuracy_at(&f32_only["hspi"], 4),
        accuracy_at(&f32_only["hspi"], 8)
    );
    assert!(accuracy_at(&f32_only["hspi"], 8) >= 0.95, "{f32_only}");

    // A model that never saw Q4_0 calls a Q4_0 server unknown (exit 4), not its nearest class.
    let model = tmp.join("three-formats.json");
    let mut args = vec!["train", "-o", model.to_str().unwrap()];
    args.extend(train_s[..3].iter().map(String::as_str));
    ok(&args);
    let q4 = test_s.iter().find(|d| d.contains("Q4_0")).unwrap();
    let mut args = vec![
        "identify",
        "--json",
        "-m",
        model.to_str().unwrap(),
        q4.as_str(),
        "--queries",
        "4",
        "--references",
    ];
    args.extend(test_s.iter().map(String::as_str));
    let r = run(&args);
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("\"decision\": \"unknown\""),
        "{}",
        r.stdout
    );
}

const F16: &str = "*/llamacpp/f16/*";

/// Run the verifier over a dataset's answers in a seeded random order, as an audit would see
/// them, within 64 output tokens.
fn audit_replay(
    model: &hspi_classify::PlatformModel,
    refs: &hspi_classify::ReferenceIndex,
    records: &[hspi_datasets::Record],
    claim: &str,
    seed: u64,
) -> hspi_classify::verify::VerifyReport {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut order: Vec<&hspi_datasets::Record> = records.iter().collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    let params = hspi_classify::verify::VerifyParams {
        max_output_tokens: 64,
        ..Default::default()
    };
    let v =
        hspi_classify::verify::Verifier::new(model, refs, claim.parse().unwrap(), params).unwrap();
    // The library's audit loop, replaying the answers in this request order.
    let order: Vec<hspi_datasets::Record> = order.into_iter().cloned().collect();
    let mut source = hspi_classify::RecordSource::in_order(&order, 8).unwrap();
    hspi_classify::run_audit(v, &mut source, &mut |_, _| Ok(()))
        .unwrap()
        .report
}

/// Verification on the llama.cpp grid: dishonest servers caught within 64 output tokens, honest
/// ones (sequential or under concurrent load, in any request order) never accused, and a proxy
/// that perturbs logprobs reported as tampered or inconclusive.
fn verification(
    tmp: &std::path::Path,
    train: [&[PathBuf]; 2],
    unseen: [&[PathBuf]; 2],
    prompts: &std::path::Path,
) {
    let strs = |d: &[PathBuf]| {
        d.iter()
            .map(|p| p.to_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let model_path = tmp.join("verifier.json");
    let bs1: Vec<String> = ["f32", "f16", "q8_0", "q4_0"]
        .iter()
        .map(|f| format!("cpu-avx2/llamacpp-11434/{f}/bs1"))
        .collect();
    let reference_platforms = bs1.join(",");
    let mut args = vec![
        "train",
        "-o",
        model_path.to_str().unwrap(),
        "--reference-platforms",
        &reference_platforms,
    ];
    let train_s: Vec<String> = train.iter().flat_map(|d| strs(d)).collect();
    args.extend(train_s.iter().map(String::as_str));
    ok(&args);
    let model = hspi_classify::PlatformModel::load(&model_path).unwrap();
    let names: Vec<String> = model
        .classes
        .iter()
        .map(|c| {
            c.members
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" = ")
        })
        .collect();
    eprintln!("verify: {} classes: {}", names.len(), names.join("; "));
    assert!(
        (5..=8).contains(&model.classes.len()),
        "four formats, alone and under load: {names:?}"
    );
    // hspi's own recomputation of the unseen prompts: the sequential (bs1) runs.
    let ref_records: Vec<hspi_datasets::Record> = unseen[0]
        .iter()
        .flat_map(|d| hspi_datasets::Dataset::open(d).unwrap().records().unwrap())
        .collect();
    let refs = hspi_classify::ReferenceIndex::new(&ref_records);
    let served: Vec<(String, Vec<hspi_datasets::Record>)> = unseen
        .iter()
        .flat_map(|dirs| dirs.iter())
        .map(|d| {
            let recs = hspi_datasets::Dataset::open(d).unwrap().records().unwrap();
            (recs[0].platform.as_ref().unwrap().to_string(), recs)
        })
        .collect();
    let (mut caught, mut dishonest, mut tokens_max) = (0, 0, 0);
    let (mut accused, mut honest, mut consistent) = (0, 0, 0);
    for (platform, records) in &served {
        let format = platform.split('/').nth(2).unwrap();
        for seed in 0..25 {
            if format == "q8_0" || format == "q4_0" {
                let r = audit_replay(&model, &refs, records, F16, seed);
                dishonest += 1;
                caught += usize::from(r.verdict.name() == "mismatch");
                tokens_max = tokens_max.max(r.output_tokens);
            }
            let own = format!("*/llamacpp/{format}/*");
            let r = audit_replay(&model, &refs, records, &own, seed);
            honest += 1;
            accused += usize::from(r.verdict.name() == "mismatch");
            consistent += usize::from(r.verdict.name() == "consistent");
        }
    }
    eprintln!(
        "verify: F16 claimed, Q8_0/Q4_0 served: caught {caught}/{dishonest} within {tokens_max} output tokens; honest audits: {accused}/{honest} accused, {consistent} consistent"
    );
    // docs/how-hspi-decides.md: caught 100 of 100 within 16 output tokens; 0 of 200 honest
    // audits accused, 182 consistent.
    assert_eq!((dishonest, honest), (100, 200));
    assert_stated_live("Q8_0/Q4_0 sold as F16 caught", caught as u64, 100);
    assert!(tokens_max <= 16, "caught within {tokens_max} output tokens");
    assert_eq!(accused, 0, "an honest server was accused");
    assert_stated_live("honest audits consistent", consistent as u64, 182);

    // The CLI over a dataset: exit 1 for a mismatch, naming the likely platform.
    let q8 = strs(unseen[0])
        .into_iter()
        .find(|d| d.contains("Q8_0"))
        .unwrap();
    let unseen_s = strs(unseen[0]);
    let mut args = vec![
        "verify",
        q8.as_str(),
        "--classifier",
        model_path.to_str().unwrap(),
        "--claim",
        F16,
        "--references",
    ];
    args.extend(unseen_s.iter().map(String::as_str));
    let r = run(&args);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("mismatch — most likely serving cpu-avx2/llamacpp-11434/q8_0"),
        "{}",
        r.stdout
    );

    // Live: an honest F16 server under concurrent load from another client.
    let server = start("avx2", "F16");
    let load_dir = tmp.join("background-load");
    let mut load = Command::new(env!("CARGO_BIN_EXE_hspi"))
        .args([
            "collect",
            "--endpoint",
            &format!("{}/v1/chat/completions", server.url),
            "--model",
            "smollm2",
            "--probes",
            train[0][0].join("probes.json").to_str().unwrap(),
            "--concurrency",
            "3",
            "--out",
            load_dir.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // One audit of the F16 claim; `budget` is the query and token limits.
    let audit = |url: &str, out: &std::path::Path, budget: &[&str]| {
        let mut args = vec![
            "audit",
            "--json",
            "--endpoint",
            url,
            "--model",
            "smollm2",
            "--probes",
            prompts.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--claim",
            F16,
            "--classifier",
            model_path.to_str().unwrap(),
        ];
        args.extend_from_slice(budget);
        args.push("--references");
        args.extend(unseen_s.iter().map(String::as_str));
        run(&args)
    };
    let within_64 = ["--max-tokens-total", "64"];
    let audit_dir = tmp.join("audit-f16");
    let r = audit(
        &format!("{}/v1/chat/completions", server.url),
        &audit_dir,
        &["--max-tokens-total", "128"],
    );
    let _ = load.wait();
    // Which batch sizes form under load depends on timing: a batch the atlas never held is an
    // unknown platform, so "inconclusive" is as honest as "consistent". Never accused, and its
    // format is always the claimed one.
    let report: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("audit of the loaded server: {e}: {}{}", r.stdout, r.stderr));
    let verdict = report["summary"]["verdict"].as_str().unwrap_or_default();
    assert!(
        verdict == "consistent" || verdict == "inconclusive",
        "honest server under load is never accused: {}{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(format_verdict(&report), "consistent", "{}", r.stdout);
    assert!(audit_dir.join("audit.json").exists() && audit_dir.join("audit.md").exists());
    eprintln!(
        "verify: honest F16 under concurrent load: {}",
        report["summary"]["verdict"]
    );

    // A proxy that adds tiny noise to every logprob: tampered or inconclusive, never a platform.
    for mode in [Noise::F64, Noise::F32Ulp] {
        let proxy = noise_proxy(&server.url, mode);
        let out = tmp.join(format!("audit-proxy-{mode:?}"));
        let r = audit(
            &format!("{}/v1/chat/completions", proxy.url),
            &out,
            &within_64,
        );
        let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
        let verdict = report["summary"]["verdict"]
            .as_str()
            .unwrap_or("")
            .to_string();
        eprintln!("verify: noise proxy ({mode:?}): {verdict}");
        assert!(
            verdict == "tampered" || verdict == "inconclusive",
            "{}{}",
            r.stdout,
            r.stderr
        );
    }

    // Endpoints that hide or round logprobs: the audit says how the endpoint shows its answers,
    // rounding is never "tampered", the honest server is never accused, and Q8_0 served as F16
    // is caught from the text alone or from fp16-rounded logprobs.
    let audit_as = |url: &str, out: &std::path::Path, tokens: &str| {
        let r = audit(
            url,
            out,
            &["--max-queries", "40", "--max-tokens-total", tokens],
        );
        let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
        (r, report)
    };
    let q8 = start("avx2", "Q8_0");
    for mode in [Noise::Strip, Noise::Fp16, Noise::Decimals4] {
        let tokens = if mode == Noise::Strip { "320" } else { "64" };
        let honest = noise_proxy(&server.url, mode);
        let out = tmp.join(format!("audit-shown-{mode:?}"));
        let (r, report) = audit_as(&format!("{}/v1/chat/completions", honest.url), &out, tokens);
        let finding = report["summary"]["finding"].as_str().unwrap_or("");
        eprintln!(
            "verify: honest F16 behind {mode:?}: {} ({finding})",
            report["summary"]["verdict"]
        );
        assert!(
            r.code != 1,
            "honest server accused: {}{}",
            r.stdout,
            r.stderr
        );
        assert!(finding.contains("This endpoint shows"), "{finding}");
        if mode == Noise::Strip {
            assert!(r.stderr.contains("none came back"), "{}", r.stderr);
        }
        if mode == Noise::Decimals4 {
            continue;
        }
        let swapped = noise_proxy(&q8.url, mode);
        let out = tmp.join(format!("audit-shown-{mode:?}-q8"));
        let (r, report) = audit_as(
            &format!("{}/v1/chat/completions", swapped.url),
            &out,
            tokens,
        );
        eprintln!(
            "verify: Q8_0 as F16 behind {mode:?}: {}",
            report["summary"]["verdict"]
        );
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        assert_eq!(report["summary"]["verdict"], "mismatch", "{}", r.stdout);
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Noise {
    /// Drop every answer's logprobs (`logprobs: null`), as most hosted endpoints do.
    Strip,
    /// Print each logprob rounded to the nearest fp16 value.
    Fp16,
    /// Print each logprob with 4 decimals.
    Decimals4,
    /// Multiply by (1 ± 1e-7) in f64 and print the f64: values no f32 computation gives.
    F64,
    /// Move each value one f32 ulp up or down, printed exactly: still f32, but the sampled
    /// token's logprob no longer equals its own top-list entry.
    F32Ulp,
}

/// A proxy in front of `upstream` that perturbs every answer's logprobs as `mode` says.
fn noise_proxy(upstream: &str, mode: Noise) -> Proxy {
    let flip = std::sync::Mutex::new(0u64);
    Proxy::start(
        upstream,
        Box::new(move |_, v| {
            perturb(v, mode, &mut flip.lock().unwrap());
            None
        }),
    )
}

fn perturb(v: &mut serde_json::Value, mode: Noise, flip: &mut u64) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x.as_f64()) {
                    ("logprobs", _) if mode == Noise::Strip => *x = serde_json::Value::Null,
                    ("logprob", Some(f)) if mode == Noise::Fp16 => {
                        *x = serde_json::json!(f64::from(half::f16::from_f64(f).to_f32()));
                    }
                    ("logprob", Some(f)) if mode == Noise::Decimals4 => {
                        *x = serde_json::from_str(&format!("{f:.4}")).unwrap();
                    }
                    ("logprob", Some(f)) => {
                        *flip += 1;
                        let up = (*flip).is_multiple_of(2);
                        let noisy = match mode {
                            Noise::F64 => f * if up { 1.0 + 1e-7 } else { 1.0 - 1e-7 },
                            Noise::Strip | Noise::Fp16 | Noise::Decimals4 => f,
                            Noise::F32Ulp => {
                                let b = (f as f32).to_bits();
                                f64::from(f32::from_bits(if up {
                                    b + 1
                                } else {
                                    b.saturating_sub(1)
                                }))
                            }
                        };
                        *x = serde_json::json!(noisy);
                    }
                    _ => perturb(x, mode, flip),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| perturb(x, mode, flip)),
        _ => {}
    }
}
