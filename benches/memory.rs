//! Memory and time of a fresh audit's references against the model's size: `cargo bench --bench
//! memory` (needs `.ci/setup`'s tiny models, SmolLM2 and Gemma-3-270M). For each model it runs,
//! in a child process of its own (so each peak is that model's alone), what `hspi audit
//! --weights` computes for every answer: the model at every format hspi computes for it, loaded
//! once, then 8 answers teacher-forced at all of them. It prints the peak resident memory
//! (`VmHWM`) against the largest single format's weights (the model at f32), the load time and
//! the references' cost per audited token, as a table and JSON. A word after `--` keeps only the
//! models whose name holds it (`cargo bench --bench memory -- Gemma`).

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use hspi_collect::teacher_forced::{ForcedReferences, Residency};
use hspi_collect::zoo::model_config::ModelConfig;
use hspi_datasets::{AskedAs, GenerationParams, NumericFormat, Outputs, ProbeInput, Record};

const ANSWERS: usize = 8;
/// The child's marker argument: the model's name, its weights, the formats and the residency
/// follow.
const CHILD: &str = "--memory-child";

/// The answers scored: a prompt and a provider's answer text each (its tokens read again).
fn answers() -> Vec<(ProbeInput, Record)> {
    let story =
        "The river came upon the great city of gold and silver, where merchants sold spices. ";
    (0..ANSWERS)
        .map(|i| {
            let input = ProbeInput::Prompt {
                text: format!("Question {i}: tell me about the river."),
                params: GenerationParams {
                    max_tokens: 64,
                    temperature: 0.0,
                    top_logprobs: 5,
                    seed: Some(i as u64),
                },
            };
            let record = Record {
                probe_id: format!("p{i}"),
                target: "bench".into(),
                platform: None,
                outputs: Outputs::Completion {
                    text: story.repeat(1 + i % 3),
                    steps: Vec::new(),
                    finish_reason: None,
                },
                timing_us: 0,
                usage: None,
                served: None,
                asked_as: Some(AskedAs::ChatTemplate),
            };
            (input, record)
        })
        .collect()
}

/// This process's peak resident memory in bytes (`VmHWM`), or its resident memory now
/// (`VmRSS`).
fn rss(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("the field in /proc/self/status");
    kb * 1024
}

/// In the child: load every format, score the answers, print one JSON line.
fn child(model: &str, weights: &Path, formats: &str, residency: Residency) {
    let formats: Vec<NumericFormat> = formats.split(',').map(|f| f.parse().unwrap()).collect();
    let base = rss("VmRSS:");
    let started = Instant::now();
    let mut engines =
        ForcedReferences::open(model, weights, &formats, Vec::new(), None, residency).unwrap();
    let load_s = started.elapsed().as_secs_f64();
    let (mut seconds, mut positions) = (0.0, 0);
    for (input, record) in answers() {
        let started = Instant::now();
        let (_, cost) = engines.score(&input, &record, 5).unwrap();
        seconds += started.elapsed().as_secs_f64();
        positions += cost.positions;
    }
    let json = serde_json::json!({
        "load_s": load_s, "score_s": seconds, "positions": positions, "peak_bytes": rss("VmHWM:"),
        "base_bytes": base,
    });
    println!("{json}");
}

/// The formats hspi computes for a model: llama.cpp's, and the market's where the served path
/// takes its architecture (`served`: plain llama).
fn formats_of(served: bool) -> Vec<NumericFormat> {
    hspi_collect::backend::candle_cpu::forced_platforms()
        .into_iter()
        .map(|p| p.format)
        .filter(|f| served || hspi_collect::scheme::for_format(*f).is_none())
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == CHILD) {
        let residency = args[at + 4].parse().unwrap();
        return child(
            &args[at + 1],
            Path::new(&args[at + 2]),
            &args[at + 3],
            residency,
        );
    }
    let cache = common::llama::cache();
    // The tiny llama has Llama 3's rotary scaling, which the served path refuses.
    let mut models: Vec<(String, PathBuf, bool)> = ["llama", "qwen2", "qwen3", "gemma3"]
        .iter()
        .map(|a| {
            (
                format!("tiny {a}"),
                cache.join(format!("tiny-models/{a}/{a}-F32.gguf")),
                false,
            )
        })
        .collect();
    models.push(("SmolLM2-135M".into(), common::llama::gguf("F32"), true));
    models.push((
        "Gemma-3-270M".into(),
        hspi_collect::zoo::gemma3_270m::weights_path(None).expect("hspi fetch gemma3-270m"),
        false,
    ));
    // `cargo bench --bench memory -- Gemma`: only the models whose name holds the word.
    if let Some(only) = args.iter().skip(1).find(|a| !a.starts_with("--")) {
        models.retain(|(name, _, _)| name.contains(only.as_str()));
    }
    println!("\n| model | parameters | formats | largest format (f32) | engines | peak (the process before loading) | engines' peak / largest | load | references per token |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut rows = Vec::new();
    for (name, weights, served) in models {
        let params = ModelConfig::of_weights(&weights).unwrap().parameters();
        let formats = formats_of(served);
        let list = formats
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        for residency in [Residency::Resident, Residency::PerAnswer] {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    CHILD,
                    "bench",
                    weights.to_str().unwrap(),
                    &list,
                    residency.name(),
                ])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = String::from_utf8_lossy(&out.stdout);
            let r: serde_json::Value = serde_json::from_str(line.lines().last().unwrap()).unwrap();
            let largest = params as f64 * 4.0;
            let (peak, base) = (
                r["peak_bytes"].as_f64().unwrap(),
                r["base_bytes"].as_f64().unwrap(),
            );
            let per_token = 1e3 * r["score_s"].as_f64().unwrap() / r["positions"].as_f64().unwrap();
            println!(
                "| {name} | {:.1} M | {} | {:.0} MB | {residency} | {:.0} MB ({:.0} MB) | {:.2} | {:.1} s | {per_token:.0} ms |",
                params as f64 / 1e6,
                formats.len(),
                largest / 1e6,
                peak / 1e6,
                base / 1e6,
                (peak - base) / largest,
                r["load_s"].as_f64().unwrap(),
            );
            rows.push(serde_json::json!({
                "model": name, "parameters": params, "formats": list,
                "residency": residency.name(),
                "largest_format_bytes": largest, "peak_bytes": peak, "base_bytes": base,
                "load_s": r["load_s"], "references_ms_per_token": per_token,
            }));
        }
    }
    println!("\n{}", serde_json::to_string_pretty(&rows).unwrap());
}
