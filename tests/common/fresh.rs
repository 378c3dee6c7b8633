//! Fresh-prompt audits replayed: answers of a live server to prompts made for one audit, hspi's
//! references computed on their tokens (teacher forcing), and `hspi verify --references
//! OUT/references --audits` over them.

use std::path::{Path, PathBuf};

use hspi_datasets::{Dataset, NumericFormat, OpenMode};

use super::llama;

/// `hspi collect` of `base`'s chat answers to `count` fresh prompts (seed `seed`) into
/// `out/answers`, and hspi's references at `formats` (every format hspi computes for SmolLM2
/// when empty) on their tokens into `out/references`.
pub fn answers_with_references(
    base: &str,
    seed: u64,
    count: usize,
    formats: &[NumericFormat],
    out: &Path,
) -> (PathBuf, PathBuf) {
    answers_with_references_of(
        "smollm2",
        &llama::smollm2_gguf(),
        base,
        seed,
        count,
        formats,
        out,
    )
}

/// [`answers_with_references`] of model `model` whose weights are `weights`.
pub fn answers_with_references_of(
    model: &str,
    weights: &Path,
    base: &str,
    seed: u64,
    count: usize,
    formats: &[NumericFormat],
    out: &Path,
) -> (PathBuf, PathBuf) {
    answers_with_engines(model, weights, base, seed, count, formats, Vec::new(), out)
}

/// [`answers_with_references_of`] with reference engines the user runs besides hspi's formats.
#[allow(clippy::too_many_arguments)]
pub fn answers_with_engines(
    model: &str,
    weights: &Path,
    base: &str,
    seed: u64,
    count: usize,
    formats: &[NumericFormat],
    servers: Vec<hspi_collect::teacher_forced::ReferenceEngine>,
    out: &Path,
) -> (PathBuf, PathBuf) {
    let probes = hspi_probe::fresh_prompts(seed, count, 8, 5);
    answers_to(model, weights, base, &probes, formats, servers, out)
}

/// [`answers_with_engines`] to the prompts of `probes` (recall prompts, say).
pub fn answers_to(
    model: &str,
    weights: &Path,
    base: &str,
    probes: &hspi_datasets::ProbeSet,
    formats: &[NumericFormat],
    servers: Vec<hspi_collect::teacher_forced::ReferenceEngine>,
    out: &Path,
) -> (PathBuf, PathBuf) {
    let file = out.join("fresh.json");
    std::fs::create_dir_all(out).unwrap();
    hspi_probe::write_probe_set(&file, probes).unwrap();
    let answers = super::chat_answers_of(model, base, &file, &out.join("answers"));
    let refs = out.join("references");
    references_of(model, weights, &answers, formats, servers, &refs);
    (answers, refs)
}

/// References at `formats` and from `servers` on the tokens of the answers in `answers` (to
/// the prompts of its probe set, of model `model`), written to `refs`: `hspi dataset
/// references`' library call, its engines held (these models are small, and `auto` on a loaded
/// CI machine would make every format per answer: the same references, several times slower).
pub fn references_of(
    model: &str,
    weights: &Path,
    answers: &Path,
    formats: &[NumericFormat],
    servers: Vec<hspi_collect::teacher_forced::ReferenceEngine>,
    refs: &Path,
) {
    let named = Dataset::open(answers).unwrap().manifest.model.id;
    assert_eq!(
        named,
        model,
        "{}: answers of another model",
        answers.display()
    );
    hspi_audit::forced_references(hspi_audit::ForcedReferences {
        answers,
        weights,
        formats: formats.to_vec(),
        servers,
        started: hspi_audit::StartedEngines {
            engines: Vec::new(),
            api: hspi_audit::EngineApi::Completions,
            wait: std::time::Duration::ZERO,
        },
        out: refs,
        mode: OpenMode::Create,
        residency: hspi_collect::residency::Residency::Resident,
        command: "tests/common/fresh.rs",
    })
    .unwrap();
}

/// 200 audits over the answers in random orders, each stopping at `max_tokens` output tokens.
pub fn replayed(answers: &Path, refs: &Path, claim: &str, max_tokens: u64) -> serde_json::Value {
    let tokens = max_tokens.to_string();
    let r = super::ok(&[
        "verify",
        answers.to_str().unwrap(),
        "--references",
        refs.to_str().unwrap(),
        "--claim",
        claim,
        "--audits",
        "200",
        "--max-tokens-total",
        &tokens,
        "--json",
    ]);
    serde_json::from_str(&r.stdout).unwrap()
}

/// How many of a tally's audits ended in verdict `name` (printed with the tally).
pub fn verdicts(tally: &serde_json::Value, name: &str) -> u64 {
    eprintln!(
        "{}: {} (mean {:.0} output tokens, at most {}); format {:?}",
        tally["claim"],
        tally["verdicts"],
        tally["mean_output_tokens"].as_f64().unwrap_or(0.0),
        tally["max_output_tokens"],
        tally["nearest"]
    );
    tally["verdicts"][name].as_u64().unwrap_or(0)
}

/// How many of a tally's audits ended in an accusation: a mismatch, a mixture or tampering.
pub fn accusations(tally: &serde_json::Value) -> u64 {
    ["mismatch", "mixed", "tampered"]
        .iter()
        .map(|v| tally["verdicts"][v].as_u64().unwrap_or(0))
        .sum()
}

/// Every format of the shipped pack: what a fresh audit computes when not told otherwise.
pub fn pack_formats() -> Vec<NumericFormat> {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(super::shipped_pack().join("pack.json")).unwrap())
            .unwrap();
    let mut formats: Vec<NumericFormat> = manifest["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let platform: hspi_datasets::Platform =
                p["platform"].as_str().unwrap().parse().unwrap();
            platform.format
        })
        .collect();
    formats.sort();
    formats.dedup();
    formats
}
