//! H100 numerics on a CPU (issue 23): the committed H100 CNN records reproduced bit for bit by
//! emulated tensor-core kernels and the committed kernel plans, the plans recovered from the
//! records by `hspi emulate fit`, and `hspi verify` of the H100's own answers against references
//! computed on this CPU. No GPU is used.

mod common;

use common::*;

const PLANS: &str = "datasets/atlas/kernel-plans/cnn-digits-h100.json";
const H100: &str = "cuda-nvidia-h100-80gb-hbm3-sm90-132sm/cublas-13.1.0";

fn plans() -> String {
    format!("{}/{PLANS}", env!("CARGO_MANIFEST_DIR"))
}

fn check() -> Vec<serde_json::Value> {
    let cnn = atlas("cnn-digits-h100");
    let r = ok(&[
        "emulate",
        "check",
        cnn.to_str().unwrap(),
        "--plans",
        &plans(),
        "--json",
    ]);
    serde_json::from_str::<serde_json::Value>(&r.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The share of probes reproduced for every committed H100 platform, printed, with the bars the
/// issue sets: ≥ 99 % for f16, bf16 and tf32 with f32 accumulation at every batch size (and f32
/// too); the rest as the atlas README states them (a drop is a regression).
#[test]
fn the_committed_h100_records_are_reproduced_on_the_cpu() {
    let checks = check();
    assert_eq!(checks.len(), 15, "a plan for each of the 15 H100 platforms");
    let plan_file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(plans()).unwrap()).unwrap();
    for c in &checks {
        let platform = c["platform"].as_str().unwrap();
        let f = &c["figures"];
        let matched = f["probes_matched"].as_u64().unwrap();
        eprintln!(
            "{platform}: {matched}/200 probes bit for bit, {} of 2000 values, max {} ulps",
            f["values_matched"], f["max_ulp"]
        );
        // The recomputation agrees with the figures the fit recorded in the plan.
        let recorded = plan_file["plans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["platform"] == platform)
            .unwrap();
        assert_eq!(&recorded["fit"]["probes_matched"], &f["probes_matched"]);
        assert_eq!(&recorded["fit"]["values_matched"], &f["values_matched"]);
        let name = platform.strip_prefix(H100).unwrap();
        let at_least = match name {
            "/f16/bs1" | "/f16/bs8" | "/f16/bs32" | "/bf16/bs1" | "/bf16/bs8" | "/bf16/bs32"
            | "/tf32/bs1" | "/tf32/bs8" | "/tf32/bs32" | "/f32/bs1" | "/f32/bs8" | "/f32/bs32" => {
                198
            }
            "/f16/acc-f16/bs1" => 196,
            "/f16/acc-f16/bs8" | "/f16/acc-f16/bs32" => 195,
            other => panic!("{platform}: no figure is set for {other}"),
        };
        assert!(
            matched >= at_least,
            "{platform}: {matched}/200, expected ≥ {at_least}"
        );
    }
}

/// The search recovers a platform's kernels from its records alone, starting from the
/// architecture's default kernel: f16 at batch 1 needs a CUDA-core order for its m = 1 GEMM
/// (the default tensor-core chain reproduces 198 of 200 there); tf32 at batch 1 needs all four
/// GEMMs found together: both linear layers on CUDA cores (32 lanes, no tf32 rounding) and conv2
/// with every k8 step from a zero accumulator, the steps added in f32; f32 at batch 1 the same
/// gemv, its convolutions short FMA chains added in f32.
#[test]
fn emulate_fit_recovers_kernels_from_the_records() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("plans.json");
    let cnn = atlas("cnn-digits-h100");
    ok(&[
        "emulate",
        "fit",
        cnn.to_str().unwrap(),
        "--platform",
        &format!("{H100}/f16/bs1"),
        "--platform",
        &format!("{H100}/tf32/bs1"),
        "--platform",
        &format!("{H100}/f32/bs1"),
        "--out",
        out.to_str().unwrap(),
    ]);
    let plans: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for plan in plans["plans"].as_array().unwrap() {
        assert_eq!(plan["fit"]["probes_matched"], 200, "{plan}");
        assert_eq!(plan["rule"], "sm90");
    }
    let tf32 = plans["plans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["platform"].as_str().unwrap().ends_with("/tf32/bs1"))
        .unwrap();
    assert!(
        tf32["gemms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| !g["kernel"].as_str().unwrap().ends_with(".sk1.fma")),
        "tf32 at batch 1 runs a split-K kernel: {tf32}"
    );
    assert!(
        tf32["gemms"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["m"] == 1)
            .all(|g| g["kernel"].as_str().unwrap().contains(".ln32x")),
        "tf32's m = 1 GEMMs run on CUDA cores, 32 lanes: {tf32}"
    );
    // A plan fitted for another model, or a platform the dataset lacks, is refused by name.
    let r = run(&[
        "emulate",
        "fit",
        cnn.to_str().unwrap(),
        "--platform",
        "cuda-nvidia-a100-sm80-108sm/cublas/f16/bs1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("no GPU platform cuda-nvidia-a100"),
        "{}",
        r.stderr
    );
}

/// References for the H100 computed here (`collect --emulate`) answer as the H100 did, and
/// `hspi verify` with them calls the H100's own answers consistent with an H100 claim and a
/// CPU's answers a mismatch on the hardware dimension.
#[test]
fn verify_h100_claims_with_references_computed_on_the_cpu() {
    let tmp = tempfile::tempdir().unwrap();
    let refs = tmp.path().join("refs");
    let cnn = atlas("cnn-digits-h100");
    let probes = cnn.join("probes.json");
    let emulated = [
        format!("{H100}/f16/bs1"),
        format!("{H100}/bf16/bs1"),
        format!("{H100}/tf32/bs1"),
    ];
    ok(&[
        "collect",
        "--emulate",
        &plans(),
        "--platforms",
        &format!("{},candle", emulated.join(",")),
        "--probes",
        probes.to_str().unwrap(),
        "--out",
        refs.to_str().unwrap(),
    ]);
    // Labelled as the H100 platforms, bit-identical to the H100's records, and saying how.
    let diff = run(&[
        "dataset",
        "diff",
        cnn.to_str().unwrap(),
        refs.to_str().unwrap(),
    ]);
    for p in &emulated {
        assert!(
            diff.stdout
                .contains(&format!("{p}: 200/200 probes bit-identical")),
            "{p}:\n{}",
            diff.stdout
        );
    }
    let manifest = hspi_datasets::Dataset::open(&refs).unwrap().manifest;
    let emulation = manifest.sessions[0].provenance.emulation.clone().unwrap();
    assert_eq!(emulation.rules, ["sm90"]);
    assert_eq!(emulation.platforms.len(), 3);
    assert!(manifest.sessions[0].provenance.gpus.is_empty());

    let clf = tmp.path().join("clf.json");
    ok(&[
        "train",
        refs.to_str().unwrap(),
        "--out",
        clf.to_str().unwrap(),
    ]);
    let verify = |answers: &std::path::Path, of: &str, claim: &str| {
        let r = run(&[
            "verify",
            answers.to_str().unwrap(),
            "--answers-of",
            of,
            "--claim",
            claim,
            "--classifier",
            clf.to_str().unwrap(),
            "--references",
            refs.to_str().unwrap(),
            "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("{e}: {} {}", r.stdout, r.stderr));
        (r.code, v)
    };
    let h100_claim = "cuda-nvidia-h100-80gb-hbm3-sm90-132sm/cublas/f16/*";
    let (code, v) = verify(&cnn, &format!("{H100}/f16/bs1"), h100_claim);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verdict"]["verdict"], "consistent", "{v}");

    let cpu = tmp.path().join("cpu");
    ok(&[
        "collect",
        "--platforms",
        "candle",
        "--probes",
        probes.to_str().unwrap(),
        "--out",
        cpu.to_str().unwrap(),
    ]);
    let candle_f16 = format!("{}/candle-0.11.1/f16/bs1", cpu_isa());
    let (code, v) = verify(&cpu, &candle_f16, h100_claim);
    assert_eq!(code, 1, "{v}");
    let hardware = v["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["dimension"] == "hardware")
        .unwrap_or_else(|| panic!("no hardware verdict: {v}"));
    assert_eq!(hardware["status"], "mismatch", "{v}");
}

/// This machine's CPU platform prefix (`cpu-avx2`).
fn cpu_isa() -> String {
    format!("cpu-{}", hspi_datasets::provenance::isa_path())
}

/// The tensor-core family as plain platform strings: the Hopper rule with one 16-product block
/// per K step answers every probe as the H100's f16 GEMMs at batch 8 and 32 did; Ampere's rule
/// (8-product blocks, 24 bits) does not. bf16 output rounding hides the difference: both rules
/// fall in the H100's bf16 class on these probes (the atlas README says so).
#[test]
fn emu_sm90_platforms_fall_in_the_h100_classes() {
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("emu");
    let cnn = atlas("cnn-digits-h100");
    let cpu = cpu_isa();
    let hopper_f16 = format!("{cpu}/emu-sm90/f16/acc-f32.tc16.sk1.fma/bs1");
    let ampere_f16 = format!("{cpu}/emu-sm80/f16/acc-f32.tc8.sk1.fma/bs1");
    let ampere_bf16 = format!("{cpu}/emu-sm80/bf16/acc-f32.tc8.sk1.fma/bs1");
    ok(&[
        "collect",
        "--platforms",
        &format!("{hopper_f16},{ampere_f16},{ampere_bf16}"),
        "--probes",
        cnn.join("probes.json").to_str().unwrap(),
        "--out",
        local.to_str().unwrap(),
    ]);
    let classes = eqcs(&[&cnn, &local]);
    let class_of = |p: &str| -> Vec<String> {
        classes
            .iter()
            .find(|members| members.iter().any(|m| m == p))
            .unwrap()
            .clone()
    };
    let mut hopper = class_of(&hopper_f16);
    hopper.sort();
    assert_eq!(
        hopper,
        [
            hopper_f16.clone(),
            format!("{H100}/f16/bs32"),
            format!("{H100}/f16/bs8")
        ]
    );
    assert_eq!(class_of(&ampere_f16), std::slice::from_ref(&ampere_f16));
    assert!(class_of(&ampere_bf16).contains(&format!("{H100}/bf16/bs1")));
    // A tensor-core order without a GPU generation is refused, naming the fix.
    let r = run(&[
        "collect",
        "--platforms",
        &format!("{cpu}/emu/f16/acc-f32.tc16.sk1.fma/bs1"),
        "--probes",
        "2",
        "--out",
        tmp.path().join("x").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("emu-sm80, emu-sm90"), "{}", r.stderr);
}
