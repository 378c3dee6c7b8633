//! A format no reference covers is never named after a known one, in pool and fresh audits alike:
//! llama.cpp serving SmolLM2 at its K-quants Q6_K and Q5_K_M (6.6 and 5.7 bits per weight; the
//! shipped pack holds neither), claimed int8, is never "consistent" and never named q8_0 over 200
//! seeded audits of the pack's pool and 200 of fresh prompts scored on the provider's tokens at
//! every format of the pack; an honest Q8_0 claimed int8 stays consistent in both.

mod common;

use std::path::Path;

use common::fresh::{answers_with_references, replayed, verdicts};
use common::llama;

const INT8: &str = "*/*/int8/*";
/// Fresh answers collected per provider (a fresh audit draws 24).
const ANSWERS: usize = 32;
/// A pool audit's and a fresh audit's whole budget: 24 prompts of 8 tokens.
const BUDGET: u64 = 192;

/// `hspi collect` of `base`'s answers to the shipped pack's whole pool into `out`.
fn pool_answers(base: &str, out: &Path) {
    let pool = common::shipped_pack().join("pool.json");
    common::ok(&[
        "collect",
        "--endpoint",
        &format!("{base}/v1/chat/completions"),
        "--model",
        "smollm2",
        "--probes",
        pool.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
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

/// Neither consistent nor named q8_0 (nor int8-w8a8) in any audit of the tally.
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
    for known in ["q8_0", "int8-w8a8"] {
        assert_eq!(
            common::named(tally, "format", known),
            0,
            "{what} named {known}: {tally}"
        );
    }
}

#[test]
fn k_quants_no_reference_covers_are_never_taken_for_int8() {
    let tmp = tempfile::tempdir().unwrap();
    for quant in ["Q6_K", "Q5_K_M", "Q8_0"] {
        let server = llama::start("avx2", quant);
        let dir = tmp.path().join(quant);
        let pool = dir.join("pool");
        pool_answers(&server.url, &pool);
        let (answers, refs) = answers_with_references(&server.url, 31, ANSWERS, &[], &dir);
        let pool_tally = pool_audits(&pool, INT8);
        let fresh_tally = replayed(&answers, &refs, INT8, BUDGET);
        if quant == "Q8_0" {
            for (mode, tally) in [("pool", &pool_tally), ("fresh", &fresh_tally)] {
                assert!(
                    verdicts(tally, "consistent") >= 190,
                    "honest Q8_0 claimed int8, {mode} audits: {tally}"
                );
                assert_eq!(verdicts(tally, "mismatch"), 0, "{mode}: {tally}");
            }
        } else {
            never_passed_as_int8(&pool_tally, &format!("{quant}, pool audits"));
            never_passed_as_int8(&fresh_tally, &format!("{quant}, fresh audits"));
        }
    }
}
