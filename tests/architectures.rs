//! Every architecture family hspi computes, against llama.cpp on the same weights: tiny
//! random-weight models of each (`.ci/tiny-models`: llama with Llama 3 rope scaling, qwen2,
//! qwen3, gemma3 with sliding-window layers), requantised by llama-quantize and served by
//! llama-server, and hspi's all-positions pass on the answer's tokens at the same format.
//! Greedy answers must agree token for token (a near tie may flip at the quantised types, where
//! candle's and ggml's kernels round differently) and the logprobs closely. Measured here (24
//! positions, mean |Δ logprob|): at F32 3e-5 to 9e-4 (SmolLM2's F32 file: 7e-4), at Q8_0, Q4_0
//! and Q4_K_M 8e-4 to 1.2e-2 (SmolLM2's Q8_0: 6.6e-2), every greedy token equal. A family
//! computed wrongly fails: Llama 3's rotary divisors left out, the tiny llama is 8.4e-3 off at
//! F32 (the bar is 2e-3).
//!
//! The second test audits each family's llama-servers on fresh prompts as `hspi audit --weights`
//! does (200 replayed audits of answers collected once).

mod common;

use common::fresh::{answers_with_references_of, replayed, verdicts};
use common::{forced_gap, llama};
use hspi_collect::zoo::codec::Codec;
use hspi_datasets::NumericFormat;

/// Long enough that gemma3's windowed layers (a window of 12) see only part of it.
const PROMPT: &str = "The river came upon the great city of gold and silver, where the \
    merchants of the east sold spices, silk and amber to travellers from every land";
const ANSWER: usize = 24;

fn tiny_model(arch: &str) -> std::path::PathBuf {
    let p = llama::cache().join(format!("tiny-models/{arch}/{arch}-F32.gguf"));
    assert!(
        p.exists(),
        "{} is missing: run .ci/setup (.ci/tiny-models)",
        p.display()
    );
    p
}

#[test]
fn each_family_answers_as_llama_cpp_computes_it() {
    let build = llama::build("avx2");
    let dir = tempfile::tempdir().unwrap();
    let mut report = Vec::new();
    for (arch, file_type) in ["llama", "qwen2", "qwen3", "gemma3"]
        .into_iter()
        .flat_map(|a| ["F32", "Q8_0", "Q4_0", "Q4_K_M"].map(|f| (a, f)))
    {
        let path = build
            .quantize(&tiny_model(arch), file_type, &dir.path().join(arch))
            .unwrap();
        let format: NumericFormat = file_type.to_ascii_lowercase().parse().unwrap();
        let arch = format!("{arch} {file_type}");
        let prompt = Codec::from_gguf(&path).unwrap().text_ids(PROMPT).unwrap();
        let gap = {
            let server = llama::LlamaServer::start(&build, &path, "tiny")
                .unwrap_or_else(|e| panic!("llama-server ({arch}) did not start: {e}"));
            forced_gap::gap(&server, &path, format, &prompt, ANSWER)
        };
        report.push(format!("{arch}: {gap}"));
        let (agree, mean) = (gap.agree, gap.mean);
        if file_type == "F32" {
            assert_eq!(
                agree, ANSWER,
                "{arch}: hspi's greedy tokens against llama-server's"
            );
            assert!(mean < 2e-3, "{arch}: mean |Δ logprob| {mean}");
        } else {
            assert!(agree >= ANSWER - 2, "{arch}: greedy {agree}/{ANSWER}");
            assert!(
                mean < 0.05,
                "{arch}: mean |Δ logprob| {mean} (SmolLM2: 0.066)"
            );
        }
        // Peaked as a trained model's answers are, not uniform noise (0.003 at the usual init).
        assert!(gap.greedy_p > 0.1, "{arch}: {gap}");
    }
    eprintln!("{}", report.join("\n"));
}

/// Answers per provider for the replayed audits.
const AUDITED: usize = 32;

/// Each family's tiny model served by llama-server at F16 (honest) and at Q8_0 and Q4_0 sold as
/// F16, audited on fresh prompts with hspi's references on the provider's own tokens: 200
/// replayed audits each, at most 64 output tokens. The honest provider is never a mismatch and
/// consistent in >= 95 %; the substitutes are a mismatch in >= 198 of 200.
#[test]
fn each_familys_substitutes_are_caught_on_fresh_prompts_and_honest_f16_never_accused() {
    let build = llama::build("avx2");
    let dir = tempfile::tempdir().unwrap();
    let formats: Vec<NumericFormat> = ["f32", "f16", "q8_0", "q4_0"]
        .map(|f| f.parse().unwrap())
        .into();
    for (i, arch) in ["llama", "qwen2", "qwen3", "gemma3"]
        .into_iter()
        .enumerate()
    {
        let weights = tiny_model(arch);
        let model = format!("tiny-{arch}");
        for (j, file_type) in ["F16", "Q8_0", "Q4_0"].into_iter().enumerate() {
            let served = build
                .quantize(&weights, file_type, &dir.path().join(arch))
                .unwrap();
            let server = llama::LlamaServer::start(&build, &served, &model)
                .unwrap_or_else(|e| panic!("llama-server ({arch} {file_type}) did not start: {e}"));
            let out = dir.path().join(format!("{arch}-{file_type}"));
            let seed = 100 + (i * 3 + j) as u64;
            let (answers, refs) = answers_with_references_of(
                &model,
                &weights,
                &server.url,
                seed,
                AUDITED,
                &formats,
                &out,
            );
            let tally = replayed(&answers, &refs, "*/*/f16/*", 64);
            if file_type == "F16" {
                assert_eq!(
                    verdicts(&tally, "mismatch"),
                    0,
                    "{arch} honest F16: {tally}"
                );
                assert!(
                    verdicts(&tally, "consistent") >= 190,
                    "{arch} honest F16: {tally}"
                );
            } else {
                assert!(
                    verdicts(&tally, "mismatch") >= 198,
                    "{arch} {file_type} sold as F16: {tally}"
                );
            }
        }
    }
}
