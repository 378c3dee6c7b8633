//! The embedded tiny LM: collectable with no download, its three candle dtypes told apart.

mod common;

use common::*;

#[test]
fn embedded_tiny_lm_collects_and_its_dtypes_form_three_classes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t");
    let r = run(&[
        "collect",
        "--model",
        "tiny-lm",
        "--probes",
        "8",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let eqc: serde_json::Value =
        serde_json::from_str(&ok(&["eqc", out.to_str().unwrap(), "--json"]).stdout).unwrap();
    assert_eq!(eqc["platforms"], 3);
    assert_eq!(
        eqc["eqcs"].as_array().unwrap().len(),
        3,
        "f32, f16 and bf16 round differently"
    );
}

#[test]
fn probes_outside_the_vocabulary_are_refused_before_collecting() {
    let tmp = tempfile::tempdir().unwrap();
    let probes = tmp.path().join("p.json");
    ok(&[
        "probe",
        "random",
        "--model",
        "smollm2",
        "--count",
        "2",
        "--out",
        probes.to_str().unwrap(),
    ]);
    let out = tmp.path().join("t");
    let r = run(&[
        "collect",
        "--model",
        "tiny-lm",
        "--probes",
        probes.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("does not fit model tiny-lm"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
}
