//! A cheaper format is never passed under a known name, in pool and fresh audits alike, against
//! llama-servers serving SmolLM2 at llama.cpp's K-quant mixes and claimed int8:
//! - Q6_K and Q5_K_M (6.6 and 5.7 bits per weight; SmolLM2's rows of 576 fit no 256-block, so
//!   llama-quantize makes its "Q6_K" 181 Q8_0 matrices and 30 Q6_K ones, its answers carrying most
//!   of Q8_0's rounding): the shipped pack and fresh audits hold their own references, and 200
//!   seeded audits of each mode name them and never call the int8 claim consistent nor name q8_0;
//! - Q3_K_M, which no reference covers: never consistent, never named q8_0;
//! - an honest Q8_0 claimed int8 stays consistent in both modes.
//!
//! Pool audits replay the answers to the pack's whole pool; fresh audits replay answers to prompts
//! made for them, with hspi's references computed on their tokens at every format of the pack
//! that could pass an int8 claim or name a K-quant: llama.cpp's and INT8 W8A8 (the market's
//! bf16, FP8, INT4 and FP4 formats, far from every K-quant, are left out for time).

mod common;

use std::path::Path;

use common::fresh::{answers_with_references, pack_formats, replayed, verdicts};
use common::llama;
use hspi_datasets::NumericFormat;

const INT8: &str = "*/*/int8/*";
/// Fresh answers collected per provider (their references are most of this test's time: about
/// half a second per answer and format on two cores).
const ANSWERS: usize = 16;
/// A pool audit's whole budget: 24 prompts of 8 tokens.
const BUDGET: u64 = 192;
/// A fresh audit's: every answer collected.
const FRESH_BUDGET: u64 = ANSWERS as u64 * 8;

/// The pack's llama.cpp formats and INT8 W8A8 (the int8 claim's members beside q8_0).
fn fresh_formats() -> Vec<NumericFormat> {
    pack_formats()
        .into_iter()
        .filter(|f| {
            matches!(
                f,
                NumericFormat::F32
                    | NumericFormat::F16
                    | NumericFormat::Gguf(_)
                    | NumericFormat::Int8W8a8
            )
        })
        .collect()
}

/// 200 pool audits of the answers in `served` with the shipped pack, claimed `claim`.
fn pool_audits(served: &Path, claim: &str) -> serde_json::Value {
    let refs: Vec<String> = common::shipped_references()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let classifier = common::shipped_pack().join("classifier.json");
    common::audits(&classifier, &refs, served, claim, BUDGET)
}

/// Never consistent on the format, never named q8_0 (int8's exact member the answers resemble).
fn never_passed_as_int8(tally: &serde_json::Value, what: &str) {
    assert_eq!(
        verdicts(tally, "consistent"),
        0,
        "{what}: a cheaper format passed an int8 claim: {tally}"
    );
    assert_eq!(
        common::tally(tally, "format", "consistent"),
        0,
        "{what}: {tally}"
    );
    assert_eq!(
        common::named(tally, "format", "q8_0 (int8)"),
        0,
        "{what} named q8_0: {tally}"
    );
}

#[test]
fn k_quants_are_named_and_never_passed_as_int8_and_honest_q8_0_stays_consistent() {
    let tmp = tempfile::tempdir().unwrap();
    for (quant, own) in [
        ("Q6_K", Some("q6_k")),
        ("Q5_K_M", Some("q5_k_m")),
        ("Q3_K_M", None),
        ("Q8_0", Some("q8_0 (int8)")),
    ] {
        let server = llama::start("avx2", quant);
        let dir = tmp.path().join(quant);
        let pool = dir.join("pool");
        common::pool_answers(&server.url, &pool);
        let (answers, refs) =
            answers_with_references(&server.url, 31, ANSWERS, &fresh_formats(), &dir);
        drop(server);
        let tallies = [
            ("pool", pool_audits(&pool, INT8)),
            ("fresh", replayed(&answers, &refs, INT8, FRESH_BUDGET)),
        ];
        for (mode, tally) in &tallies {
            let what = format!("{quant}, {mode} audits");
            if quant == "Q8_0" {
                assert!(
                    verdicts(tally, "consistent") >= 180,
                    "honest {what} claimed int8: {tally}"
                );
                assert_eq!(common::fresh::accusations(tally), 0, "{what}: {tally}");
                continue;
            }
            never_passed_as_int8(tally, &what);
            if let Some(own) = own {
                assert!(
                    common::named(tally, "format", own) >= 190,
                    "{what}: named by its own reference: {tally}"
                );
            }
        }
    }
}
