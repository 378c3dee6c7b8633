//! Endpoints that hide or round logprobs, measured on the committed llama.cpp grid
//! (datasets/atlas/llama-xeon-avx512): the provider's answers are shown as such an endpoint shows
//! them (`hspi verify --as text-only | rounded:fp16 | rounded:4dp`), hspi's references are shown
//! the same way, and the verdicts are counted over seeded audits. Same build as the references
//! (the lab): substitutions caught, honest servers never accused. Another build (AVX-512 answers,
//! AVX2 references): no format called wrong. The live path (a proxy in front of llama-server)
//! is in tests/llama_server.rs.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn grid(set: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/atlas/llama-xeon-avx512")
        .join(set)
        .to_str()
        .unwrap()
        .to_string()
}

const FORMATS: [&str; 4] = ["f32", "f16", "q8_0", "q4_0"];

struct Tally {
    verdicts: serde_json::Value,
    format: serde_json::Value,
    max_queries: u64,
    max_tokens: u64,
}

impl Tally {
    fn verdict(&self, name: &str) -> u64 {
        self.verdicts[name].as_u64().unwrap_or(0)
    }
    fn format(&self, status: &str) -> u64 {
        self.format[status].as_u64().unwrap_or(0)
    }
}

fn audits(
    model: &Path,
    served: &str,
    claimed: &str,
    shown: &str,
    audits: &str,
    max_tokens: &str,
) -> Tally {
    let claim = format!("*/llamacpp/{claimed}/*");
    let refs: Vec<String> = FORMATS
        .iter()
        .map(|f| grid(&format!("avx2-{f}-unseen")))
        .collect();
    let served = grid(&format!("{served}-unseen"));
    let mut args = vec![
        "verify",
        served.as_str(),
        "--json",
        "--classifier",
        model.to_str().unwrap(),
        "--claim",
        &claim,
        "--as",
        shown,
        "--audits",
        audits,
        "--max-queries",
        "40",
        "--max-tokens-total",
        max_tokens,
        "--references",
    ];
    args.extend(refs.iter().map(String::as_str));
    let t: serde_json::Value = serde_json::from_str(&ok(&args).stdout).unwrap();
    let format = t["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d[0] == "format")
        .map(|d| d[1].clone())
        .unwrap_or_default();
    Tally {
        verdicts: t["verdicts"].clone(),
        format,
        max_queries: t["max_queries"].as_u64().unwrap(),
        max_tokens: t["max_output_tokens"].as_u64().unwrap(),
    }
}

fn trained(dir: &Path) -> PathBuf {
    let model = dir.join("avx2.json");
    let train: Vec<String> = FORMATS
        .iter()
        .map(|f| grid(&format!("avx2-{f}-train")))
        .collect();
    let mut args = vec!["train", "--out", model.to_str().unwrap()];
    args.extend(train.iter().map(String::as_str));
    ok(&args);
    model
}

#[test]
fn text_only_and_rounded_answers_catch_substitutions_and_never_accuse_an_honest_server() {
    let tmp = tempfile::tempdir().unwrap();
    let model = trained(tmp.path());
    let mut table = Vec::new();
    // Text only: 40 requests of 8 tokens; rounded: 64 output tokens.
    for (shown, tokens) in [("text-only", "320"), ("rounded:fp16", "64")] {
        for served in ["q8_0", "q4_0"] {
            let t = audits(
                &model,
                &format!("avx2-{served}"),
                "f16",
                shown,
                "100",
                tokens,
            );
            table.push(format!("{shown}: {served} claimed f16: {}", t.verdicts));
            assert!(t.format("mismatch") >= 99, "{shown} {served}: {}", t.format);
            assert!(t.max_queries <= 40, "{shown}: {} requests", t.max_queries);
        }
        let t = audits(&model, "avx2-f16", "f16", shown, "200", tokens);
        table.push(format!("{shown}: f16 honest: {}", t.verdicts));
        assert_eq!(t.format("mismatch"), 0, "{shown}: honest f16 accused");
        assert_eq!(t.verdict("mismatch") + t.verdict("tampered"), 0);
        assert!(t.max_tokens <= tokens.parse().unwrap());
    }
    // Rounding to 4 decimals is how an API prints numbers, not tampering.
    let t = audits(&model, "avx2-f16", "f16", "rounded:4dp", "200", "64");
    table.push(format!("rounded:4dp: f16 honest: {}", t.verdicts));
    assert_eq!(
        t.verdict("tampered") + t.verdict("mismatch"),
        0,
        "{:?}",
        t.verdicts
    );
    eprintln!("{}", table.join("\n"));
}

#[test]
fn another_build_shown_as_text_or_rounded_is_never_called_the_wrong_format() {
    let tmp = tempfile::tempdir().unwrap();
    let model = trained(tmp.path());
    let mut table = Vec::new();
    for shown in ["text-only", "rounded:fp16", "rounded:4dp"] {
        for served in FORMATS {
            let t = audits(
                &model,
                &format!("avx512-{served}"),
                served,
                shown,
                "200",
                "320",
            );
            table.push(format!(
                "avx512 {served} honest, {shown}: format {}",
                t.format
            ));
            assert_eq!(t.format("mismatch"), 0, "{shown}: honest {served} accused");
            assert_eq!(t.verdict("mismatch") + t.verdict("tampered"), 0);
        }
    }
    eprintln!("{}", table.join("\n"));
}

#[test]
fn answers_asked_through_another_api_path_are_not_compared_with_the_references() {
    use hspi_classify::verify::{Verdict, Verifier, VerifyParams};
    let tmp = tempfile::tempdir().unwrap();
    let model = hspi_classify::PlatformModel::load(&trained(tmp.path())).unwrap();
    let records = |set: &str| {
        hspi_datasets::Dataset::open(grid(set))
            .unwrap()
            .records()
            .unwrap()
    };
    let refs: Vec<hspi_datasets::Record> = FORMATS
        .iter()
        .flat_map(|f| records(&format!("avx2-{f}-unseen")))
        .collect();
    let index = hspi_classify::ReferenceIndex::new(&refs);
    // The same server asked through legacy completions: the raw prompt, no chat template.
    let mut served = records("avx2-q8_0-unseen");
    for r in &mut served {
        r.platform = None;
        r.target = r.target.replace("/chat/completions", "/completions");
    }
    let v = Verifier::new(
        &model,
        &index,
        "*/llamacpp/f16/*".parse().unwrap(),
        VerifyParams::default(),
    )
    .unwrap();
    let mut source = hspi_classify::RecordSource::new(&served).unwrap();
    let report = hspi_classify::run_audit(v, &mut source, &mut |_, _| Ok(()))
        .unwrap()
        .report;
    match &report.verdict {
        Verdict::Inconclusive { reason } => assert!(
            reason.contains("raw prompt") && reason.contains("chat template"),
            "{reason}"
        ),
        v => panic!("compared answers asked another way: {v:?}"),
    }
}

#[test]
fn eval_as_text_only_measures_what_the_text_alone_identifies() {
    let accuracy = |shown: &str| -> Vec<f64> {
        let mut args = vec!["eval", "--json", "--queries", "1,8", "--held-out", "0"];
        args.extend(["--as", shown, "--train"]);
        let train: Vec<String> = FORMATS
            .iter()
            .map(|f| grid(&format!("avx2-{f}-train")))
            .collect();
        let test: Vec<String> = FORMATS
            .iter()
            .map(|f| grid(&format!("avx2-{f}-unseen")))
            .collect();
        args.extend(train.iter().map(String::as_str));
        args.push("--test");
        args.extend(test.iter().map(String::as_str));
        let r: serde_json::Value = serde_json::from_str(&ok(&args).stdout).unwrap();
        r["hspi"]["by_queries"]["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[1].as_f64().unwrap())
            .collect()
    };
    let text = accuracy("text-only");
    eprintln!("eval --as text-only: {text:?} at 1 and 8 queries");
    // F32 and F16 greedy texts are nearly always the same: one query cannot tell them apart.
    assert!(
        text[0] < 0.6,
        "text-only scored from logprobs it cannot see: {text:?}"
    );
    assert!(text[1] > text[0], "more texts tell more: {text:?}");
    assert_eq!(accuracy("rounded:fp16")[0], 1.0);
}
