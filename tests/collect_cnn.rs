//! The white-box CPU grid on the embedded CNN, through the real binary.

mod common;

use std::time::Duration;

use common::*;

#[test]
fn two_hundred_probes_give_ten_or_more_eqcs_and_a_bit_identical_rerun() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    assert_eq!(collect_cnn(&a, "200", &[]).code, 0);
    assert_eq!(collect_cnn(&b, "200", &[]).code, 0);

    let eqc: serde_json::Value =
        serde_json::from_str(&ok(&["eqc", a.to_str().unwrap(), "--json"]).stdout).unwrap();
    let classes = eqc["eqcs"].as_array().unwrap();
    assert!(eqc["platforms"].as_u64().unwrap() >= 24);
    assert_eq!(eqc["probes"], 200);
    assert!(classes.len() >= 10, "only {} EQCs", classes.len());
    let class_of = |fmt: &str| {
        classes
            .iter()
            .position(|c| {
                c["members"].as_array().unwrap().iter().any(|m| {
                    m.as_str().unwrap().contains("/candle-")
                        && m.as_str().unwrap().ends_with(&format!("/{fmt}/bs1"))
                })
            })
            .unwrap_or_else(|| panic!("candle {fmt} missing"))
    };
    let (f32c, f16c, bf16c) = (class_of("f32"), class_of("f16"), class_of("bf16"));
    assert!(
        f32c != f16c && f16c != bf16c && f32c != bf16c,
        "candle f32/f16/bf16 share a class"
    );

    assert_eq!(record_set(&a), record_set(&b), "a rerun is bit-identical");
    let eqc_b = ok(&["eqc", b.to_str().unwrap(), "--json"]).stdout;
    assert_eq!(
        eqc.to_string(),
        serde_json::from_str::<serde_json::Value>(&eqc_b)
            .unwrap()
            .to_string()
    );
}

#[test]
fn sigkill_at_any_moment_then_resume_equals_an_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    let killed = tmp.path().join("killed");
    assert_eq!(collect_cnn(&whole, "1000", &[]).code, 0);

    // 20 kills at seeded random moments: in setup, mid-shard and between batches. 1,000 probes
    // (26,000 records, ~2.5 s uninterrupted on 2 cores) so that 20 kills 5-150 ms into each
    // attempt land before the collection can finish (300 probes finished after 17 on a fast CPU).
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20);
    let mut kills = 0;
    let mut finished = false;
    for attempt in 0..40 {
        if kills == 20 {
            break;
        }
        let mut cmd = hspi();
        cmd.args([
            "collect",
            "--model",
            "cnn-digits",
            "--probes",
            "1000",
            "--out",
            killed.to_str().unwrap(),
        ]);
        if attempt > 0 {
            cmd.arg("--resume");
        }
        let mut child = cmd.stderr(std::process::Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.random_range(5..150)));
        match child.try_wait().unwrap() {
            Some(status) => {
                assert!(status.success(), "collect failed on attempt {attempt}");
                finished = true;
                break;
            }
            None => {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                kills += 1;
            }
        }
    }
    if !finished {
        assert_eq!(collect_cnn(&killed, "1000", &["--resume"]).code, 0);
    }
    assert_eq!(
        kills, 20,
        "only {kills} kills landed before the collection finished"
    );
    let (w, k) = (record_set(&whole), record_set(&killed));
    assert_eq!(w.len(), k.len(), "nothing lost, nothing duplicated");
    assert_eq!(w, k);
    ok(&["dataset", "verify", killed.to_str().unwrap()]);
}

#[test]
fn an_unknown_platform_lists_the_valid_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let r = collect_cnn(
        &tmp.path().join("x"),
        "3",
        &["--platforms", "cpu-avx2/candle/f33/bs1"],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("unknown numeric format 'f33'"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("HARDWARE/ENGINE/FORMAT"), "{}", r.stderr);
    assert!(
        !tmp.path().join("x").exists(),
        "nothing written for a bad command"
    );
}

#[test]
fn an_existing_output_is_refused_without_resume_or_force() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d");
    assert_eq!(collect_cnn(&out, "2", &["--platforms", "candle"]).code, 0);
    let before = record_set(&out);
    let r = collect_cnn(&out, "2", &["--platforms", "candle"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("already exists") && r.stderr.contains("--resume"),
        "{}",
        r.stderr
    );
    assert_eq!(record_set(&out), before, "the refused run changed nothing");
    assert_eq!(
        collect_cnn(&out, "2", &["--platforms", "candle", "--force"]).code,
        0
    );
}

#[test]
fn a_cuda_platform_without_a_driver_exits_2_with_the_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let r = collect_cnn(
        &tmp.path().join("g"),
        "2",
        &["--platforms", "cuda-h100-sm90-132sm/cublas/f32/bs1"],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains(
            "no CUDA driver found; build with --features cuda on a machine with an NVIDIA GPU"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn a_corrupt_shard_is_named_with_its_record_and_no_classes_are_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d");
    assert_eq!(collect_cnn(&out, "5", &["--platforms", "candle"]).code, 0);
    let shard = out.join("records/shard-000000.jsonl");
    let text = std::fs::read_to_string(&shard).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut bad = lines.clone();
    let fourth = lines[3].replacen("\"timing_us\":", "\"timing_us\":9", 1);
    bad[3] = &fourth;
    std::fs::write(&shard, bad.join("\n") + "\n").unwrap();
    let r = run(&["eqc", out.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("shard-000000.jsonl") && r.stderr.contains("record 4"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());
}

#[test]
fn a_dataset_of_another_schema_version_names_both_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d");
    assert_eq!(collect_cnn(&out, "2", &["--platforms", "candle"]).code, 0);
    let m = out.join("manifest.json");
    let text = std::fs::read_to_string(&m)
        .unwrap()
        .replace("\"schema_version\": 1", "\"schema_version\": 99");
    std::fs::write(&m, text).unwrap();
    let r = run(&["eqc", out.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("schema version 99") && r.stderr.contains("version 1"),
        "{}",
        r.stderr
    );
}

#[test]
fn eqc_table_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d");
    let platforms = format!(
        "{isa}/emu/f32/acc-f32.seq.sk1.fma/bs1,{isa}/emu/bf16/acc-f32.seq.sk1.fma/bs1,{isa}/emu/bf16/acc-f32.blk64.sk4.fma/bs1,{isa}/emu/int8/acc-f32.seq.sk1.fma/bs1,{isa}/emu/int8/acc-f32.pair.sk2.nofma/bs1",
        isa = format!("cpu-{}", hspi_datasets::provenance::isa_path())
    );
    assert_eq!(
        collect_cnn(&out, "20", &["--platforms", &platforms]).code,
        0
    );
    let table = ok(&["eqc", out.to_str().unwrap()]).stdout;
    insta::with_settings!({filters => vec![(r"cpu-[a-z0-9]+/", "cpu-ISA/")]}, {
        insta::assert_snapshot!(table);
    });
}

#[test]
fn the_cuda_grid_without_a_driver_exits_2_with_the_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let r = collect_cnn(&tmp.path().join("g"), "2", &["--platforms", "cuda"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no CUDA driver found"), "{}", r.stderr);
}

#[test]
fn dataset_diff_tells_reproduced_records_from_changed_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let (f32, f16) = (
        format!("{isa}/candle-0.11.1/f32/bs1"),
        format!("{isa}/candle-0.11.1/f16/bs1"),
    );
    let both = format!("{f32},{f16}");
    let dir = |name: &str| tmp.path().join(name);
    for (name, platforms) in [("a", &both), ("b", &both), ("f32", &f32), ("f16", &f16)] {
        let r = collect_cnn(&dir(name), "20", &["--platforms", platforms]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let diff = |l: &str, r: &str| {
        run(&[
            "dataset",
            "diff",
            dir(l).to_str().unwrap(),
            dir(r).to_str().unwrap(),
        ])
    };
    // A rerun repeats every bit.
    let r = diff("a", "b");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r
        .stdout
        .contains(&format!("{f32}: 20/20 probes bit-identical (identical)")));
    assert!(r
        .stdout
        .contains(&format!("{f16}: 20/20 probes bit-identical")));
    // One platform on each side: compared whatever the labels; f16 is not f32.
    let r = diff("f32", "f16");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&format!("{f32} ~ {f16}:")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("first difference at probe"),
        "{}",
        r.stdout
    );
    // A platform one side lacks is named.
    let r = diff("a", "f32");
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains(&format!("{f16}: only in the left dataset")),
        "{}",
        r.stdout
    );
    assert!(r
        .stdout
        .contains(&format!("{f32}: 20/20 probes bit-identical")));
}
