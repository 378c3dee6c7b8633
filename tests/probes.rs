//! Probe generators that separate platforms, and minimal probe sets.

mod common;

use common::*;

/// `hspi probe ARGS --json`, its report parsed.
fn probe_report(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["probe"];
    all.extend_from_slice(args);
    all.push("--json");
    serde_json::from_str(&ok(&all).stdout).unwrap()
}

fn eqc_count(dir: &std::path::Path) -> usize {
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["eqc", dir.to_str().unwrap(), "--json"]).stdout).unwrap();
    v["eqcs"].as_array().unwrap().len()
}

#[test]
fn stress_probes_split_a_class_that_random_probes_cannot() {
    let tmp = tempfile::tempdir().unwrap();
    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let platforms =
        format!("{isa}/emu/bf16/acc-f32.seq.sk1.fma/bs1,{isa}/emu/bf16/acc-f32.blk64.sk4.fma/bs1");
    let (rand, stress) = (tmp.path().join("r.json"), tmp.path().join("s.json"));
    ok(&[
        "probe",
        "random",
        "--count",
        "60",
        "--out",
        rand.to_str().unwrap(),
    ]);
    ok(&[
        "probe",
        "stress",
        "--count",
        "60",
        "--out",
        stress.to_str().unwrap(),
    ]);
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    assert_eq!(
        collect_cnn(&a, rand.to_str().unwrap(), &["--platforms", &platforms]).code,
        0
    );
    assert_eq!(
        collect_cnn(&b, stress.to_str().unwrap(), &["--platforms", &platforms]).code,
        0
    );
    assert_eq!(
        eqc_count(&a),
        1,
        "with f32 accumulation, bf16 products of 8-bit pixels sum alike in any order"
    );
    assert_eq!(
        eqc_count(&b),
        2,
        "bf16 rounding midpoints expose the reduction order"
    );
}

#[test]
fn a_minimized_probe_set_keeps_every_class_apart_with_fewer_probes() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    assert_eq!(collect_cnn(&full, "30", &[]).code, 0);
    let min = tmp.path().join("min.json");
    let report = probe_report(&[
        "minimize",
        full.to_str().unwrap(),
        "--out",
        min.to_str().unwrap(),
    ]);
    assert_eq!(report["covered"], report["pairs"]);
    let chosen = report["probes_chosen"].as_u64().unwrap();
    assert!((1..30).contains(&chosen), "{report}");
    let again = tmp.path().join("again");
    assert_eq!(collect_cnn(&again, min.to_str().unwrap(), &[]).code, 0);
    assert_eq!(eqc_count(&again), eqc_count(&full));
}

#[test]
fn border_inputs_split_every_pair_of_a_small_grid_and_identify_each_class() {
    let tmp = tempfile::tempdir().unwrap();
    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let platforms = format!(
        "{isa}/candle-0.11.1/f32/bs1,{isa}/candle-0.11.1/bf16/bs1,{isa}/emu/int8/acc-f32.seq.sk1.fma/bs1,{isa}/emu/fp8-e4m3/acc-f32.seq.sk1.fma/bs1"
    );
    let grid = tmp.path().join("grid");
    assert_eq!(
        collect_cnn(&grid, "8", &["--platforms", &platforms]).code,
        0
    );
    let out = tmp.path().join("border.json");
    let r = probe_report(&[
        "border",
        grid.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r["pairs"], 6);
    assert_eq!(r["found"], 6, "{r}");
    assert_eq!(r["identification_accuracy"], 1.0, "{r}");
    // The border set is a probe file: collecting it shows each pair disagreeing on a top label.
    let again = tmp.path().join("again");
    assert_eq!(
        collect_cnn(&again, out.to_str().unwrap(), &["--platforms", &platforms]).code,
        0
    );
    assert_eq!(eqc_count(&again), 4);
}

#[test]
fn border_inputs_split_all_300_pairs_of_the_cnn_grid() {
    let tmp = tempfile::tempdir().unwrap();
    let grid = tmp.path().join("grid");
    assert_eq!(collect_cnn(&grid, "20", &[]).code, 0);
    let out = tmp.path().join("border.json");
    let r = probe_report(&[
        "border",
        grid.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        (r["eqcs"].as_u64(), r["pairs"].as_u64()),
        (Some(25), Some(300))
    );
    assert_eq!(r["found"], 300, "{r}");
    assert!(
        r["identification_accuracy"].as_f64().unwrap() >= 0.95,
        "{r}"
    );

    // Collected through `hspi collect`, every two classes answer some border input with different
    // top labels: each query is one duel, as the majority vote assumes.
    let again = tmp.path().join("again");
    assert_eq!(collect_cnn(&again, out.to_str().unwrap(), &[]).code, 0);
    let eqcs: serde_json::Value =
        serde_json::from_str(&ok(&["eqc", grid.to_str().unwrap(), "--json"]).stdout).unwrap();
    let representatives: Vec<String> = eqcs["eqcs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["members"][0].as_str().unwrap().to_string())
        .collect();
    let mut labels: std::collections::BTreeMap<String, Vec<(String, usize)>> = Default::default();
    for record in hspi_datasets::Dataset::open(&again)
        .unwrap()
        .records()
        .unwrap()
    {
        let hspi_datasets::Outputs::Logits { values } = &record.outputs else {
            panic!("image records hold logits")
        };
        labels
            .entry(record.platform.unwrap().to_string())
            .or_default()
            .push((record.probe_id.clone(), values.argmax().unwrap()));
    }
    for v in labels.values_mut() {
        v.sort();
    }
    let mut unsplit = Vec::new();
    for (i, a) in representatives.iter().enumerate() {
        for b in &representatives[i + 1..] {
            if labels[a] == labels[b] {
                unsplit.push(format!("{a} vs {b}"));
            }
        }
    }
    assert!(unsplit.is_empty(), "no border input splits {unsplit:?}");
}
