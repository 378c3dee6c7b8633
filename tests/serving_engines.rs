//! Serving engines that are not hspi's own, audited from a CPU with no access to the engine:
//! PyTorch/transformers (`.ci/transformers-serve`) on the development machine's CPU
//! (datasets/atlas/transformers-cpu, always present) and, once a GPU session has run
//! `.ci/gpu-serving-atlas`, llama.cpp's CUDA backend and transformers on an H100
//! (datasets/atlas/llama-cuda-h100, transformers-h100). Each atlas holds one dataset per engine
//! variant and split: `VARIANT-train`/`VARIANT-unseen` one request at a time,
//! `VARIANT-load-train`/`VARIANT-load-unseen` eight at a time into a batching server. A GPU atlas
//! still absent is skipped with a note, never counted as passed silently.

mod common;

use std::path::PathBuf;

use common::*;

/// The served-engine atlases: directory, and whether it is committed already.
const SERVED: [(&str, bool); 3] = [
    ("transformers-cpu", true),
    ("llama-cuda-h100", false),
    ("transformers-h100", false),
];

/// The atlases present; a missing GPU atlas is named on stderr, a missing CPU one fails.
fn served() -> Vec<(&'static str, PathBuf)> {
    let mut present = Vec::new();
    for (dir, required) in SERVED {
        let path = atlas(dir);
        if path.is_dir() {
            present.push((dir, path));
        } else {
            assert!(!required, "datasets/atlas/{dir} is missing");
            eprintln!(
                "note: datasets/atlas/{dir} is not collected yet: it awaits a GPU session \
                 (`.ci/gpu-serving-atlas`, datasets/atlas/README.md); its checks are skipped"
            );
        }
    }
    present
}

/// The datasets of `dir` whose names end with `suffix`, sorted.
fn sets(dir: &std::path::Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("manifest.json").is_file())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().ends_with(suffix))
        .collect();
    v.sort();
    v
}

fn name(p: &std::path::Path) -> &str {
    p.file_name().unwrap().to_str().unwrap()
}

/// The one-slot datasets of a split (`VARIANT-SPLIT`, not `VARIANT-load-SPLIT`).
fn one_slot(dir: &std::path::Path, split: &str) -> Vec<PathBuf> {
    sets(dir, &format!("-{split}"))
        .into_iter()
        .filter(|p| !name(p).contains("-load-"))
        .collect()
}

fn strs(paths: &[PathBuf]) -> Vec<&str> {
    paths.iter().map(|p| p.to_str().unwrap()).collect()
}

/// The CPU llama.cpp grid of the Xeon (both builds), or its AVX2 build only.
fn cpu_grid(split: &str, avx2_only: bool) -> Vec<PathBuf> {
    sets(&atlas("llama-xeon-avx512"), &format!("-{split}"))
        .into_iter()
        .filter(|p| !avx2_only || name(p).starts_with("avx2-"))
        .collect()
}

/// The platform label of a dataset's records (hardware/engine/format/…).
fn label(dataset: &std::path::Path) -> String {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dataset.join("manifest.json")).unwrap()).unwrap();
    m["platforms"][0].as_str().unwrap().to_string()
}

/// (hardware, engine kind, format) of a label: what must never share a class with another.
fn identity(label: &str) -> (String, String, String) {
    let f: Vec<&str> = label.split('/').collect();
    let kind = f[1].split('-').next().unwrap();
    (f[0].to_string(), kind.to_string(), f[2].to_string())
}

#[test]
fn every_served_engine_and_format_is_its_own_class_apart_from_the_cpu_grid() {
    let mut datasets = cpu_grid("train", false);
    for (_, dir) in served() {
        datasets.extend(one_slot(&dir, "train"));
    }
    let mut args = vec!["eqc", "--json"];
    args.extend(strs(&datasets));
    let r = ok(&args);
    let eqc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let classes = eqc["eqcs"].as_array().unwrap();
    let mut identities = std::collections::BTreeSet::new();
    for class in classes {
        let members: Vec<&str> = class["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        let first = identity(members[0]);
        for m in &members {
            assert_eq!(
                identity(m),
                first,
                "one class holds two engines, formats or machines: {members:?}"
            );
        }
        identities.insert(first);
    }
    // Every engine × format served is a class of its own (attention kernels and flash
    // attention variants may share one: same engine, same format).
    let served_identities: std::collections::BTreeSet<_> =
        datasets.iter().map(|d| identity(&label(d))).collect();
    assert_eq!(identities, served_identities, "{}", r.stdout);
    eprintln!("{} classes over {} datasets", classes.len(), datasets.len());
}

/// The share of batched answers that differ from the one-slot answers, per load dataset: the
/// atlas README states each one, and this keeps it true to the committed data.
#[test]
fn load_variation_figures_in_the_atlas_readme_match_the_data() {
    let readme = std::fs::read_to_string(atlas("README.md")).unwrap();
    for (dir_name, dir) in served() {
        let loads = sets(&dir, "")
            .into_iter()
            .filter(|p| name(p).contains("-load-"))
            .collect::<Vec<_>>();
        assert!(!loads.is_empty(), "{dir_name}: no load datasets");
        for load in loads {
            let alone = dir.join(name(&load).replace("-load-", "-"));
            // `dataset diff` exits 1 when the datasets differ.
            let r = run(&[
                "dataset",
                "diff",
                load.to_str().unwrap(),
                alone.to_str().unwrap(),
                "--json",
            ]);
            assert!(r.code <= 1, "{}", r.stderr);
            let d: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
            let pair = &d["pairs"][0];
            let (same, n) = (
                pair["identical"].as_u64().unwrap(),
                pair["common_probes"].as_u64().unwrap(),
            );
            let row = format!("| `{dir_name}/{}` | {} / {n} |", name(&load), n - same);
            eprintln!("{row}");
            assert!(
                readme.contains(&row),
                "datasets/atlas/README.md lacks the row {row}"
            );
        }
    }
}

/// `hspi verify --audits 200` of one served dataset against the CPU llama.cpp grid only.
fn audit(classifier: &std::path::Path, served: &std::path::Path, claim: &str) -> serde_json::Value {
    let split = if name(served).ends_with("-train") {
        "train"
    } else {
        "unseen"
    };
    let refs = cpu_grid(split, true);
    audits(
        classifier,
        &strs(&refs),
        served,
        &format!("*/*/{claim}/*"),
        64,
    )
}

/// The auditor owns neither the engine nor the GPU: the classifier and references are the CPU
/// llama.cpp grid's (AVX2, what hspi recomputes here). The served format is never called wrong
/// (one slot or under load); a cheaper format sold as F16 is caught.
#[test]
fn an_auditor_without_the_engine_never_accuses_the_served_format_and_catches_substitutions() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("cpu-llama.json");
    let train = cpu_grid("train", true);
    let mut args = vec!["train", "--out", model.to_str().unwrap()];
    args.extend(strs(&train));
    ok(&args);
    let mut table = Vec::new();
    for (dir_name, dir) in served() {
        let mut answers = one_slot(&dir, "unseen");
        answers.extend(sets(&dir, "-load-unseen"));
        answers.extend(sets(&dir, "-load-train"));
        for served in answers {
            let format = identity(&label(&served)).2;
            let sold = audit(&model, &served, "f16");
            let line = |claim: &str, t: &serde_json::Value| {
                format!(
                    "{dir_name}/{} claimed {claim}: format {}",
                    name(&served),
                    t["dimensions"]
                )
            };
            table.push(line("f16", &sold));
            match format.as_str() {
                // Measured on transformers-cpu when committed: fp16 consistent in 111 (sdpa)
                // and 150 (eager) of 200 audits of the unseen answers, inconclusive otherwise.
                "f16" => assert_eq!(tally(&sold, "format", "mismatch"), 0, "{sold}"),
                // The bar for a quantised model sold as F16: 99 % within 64 tokens.
                "q8_0" | "q4_0" => {
                    assert!(tally(&sold, "format", "mismatch") >= 198, "{sold}");
                    let honest = audit(&model, &served, &format);
                    table.push(line(&format, &honest));
                    assert_eq!(tally(&honest, "format", "mismatch"), 0, "{honest}");
                }
                // bf16 sold as F16: mismatch 200 of 200 on transformers-cpu.
                "bf16" => assert!(tally(&sold, "format", "mismatch") >= 198, "{sold}"),
                // f32 sold as F16 (more than was paid for): mismatch in 96 of 200 audits of
                // the unseen answers, inconclusive otherwise; on the training prompts 2 of 200
                // called consistent, within the verifier's false-acceptance target (1 %).
                _ => {
                    assert!(tally(&sold, "format", "consistent") <= 2, "{sold}");
                    let honest = audit(&model, &served, &format);
                    table.push(line(&format, &honest));
                    assert_eq!(tally(&honest, "format", "mismatch"), 0, "{honest}");
                }
            }
        }
    }
    eprintln!("{}", table.join("\n"));
}

/// With the served engines' one-slot answers in the atlas (classes and references), their
/// answers under load, whose bits differ, are named by hardware and engine: a GPU's answers
/// name the GPU.
#[test]
fn with_the_engines_in_the_atlas_batched_answers_name_their_hardware_and_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("atlas.json");
    let model = model.to_str().unwrap();
    let mut train = cpu_grid("train", true);
    let mut refs = cpu_grid("unseen", true);
    let mut loads = Vec::new();
    for (_, dir) in served() {
        train.extend(one_slot(&dir, "train"));
        refs.extend(one_slot(&dir, "unseen"));
        loads.extend(sets(&dir, "-load-unseen"));
    }
    let mut args = vec!["train", "--out", model];
    args.extend(strs(&train));
    ok(&args);
    let mut named = 0;
    for load in &loads {
        let mut args = vec![
            "identify",
            "--model",
            model,
            load.to_str().unwrap(),
            "--json",
        ];
        args.push("--references");
        args.extend(strs(&refs));
        let r = run(&args);
        let out: serde_json::Value = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("identify {load:?}: {e}\n{}", r.stderr));
        let answer = &out[0];
        let truth = identity(&label(load));
        let decision = &answer["decision"];
        eprintln!("{}: {decision}", name(load));
        if let Some(platform) = decision["name"].as_str() {
            let got = identity(platform);
            assert_eq!(
                (&got.0, &got.1),
                (&truth.0, &truth.1),
                "{load:?} named as {platform}"
            );
            named += 1;
        }
    }
    // Measured on transformers-cpu when committed: see the atlas README.
    assert!(
        named * 10 >= loads.len() * 9,
        "only {named} of {} batched datasets named",
        loads.len()
    );
}
