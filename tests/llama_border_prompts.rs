//! Border prompts found white-box (SmolLM2's full logits through candle at each format, prompts
//! tokenised as llama.cpp does), then sent to the real llama-server at the same four formats.

mod common;

use common::llama::{gguf, start};
use common::*;

const FORMATS: [&str; 4] = ["F32", "F16", "Q8_0", "Q4_0"];

#[test]
fn white_box_border_prompts_split_llama_cpp_formats() {
    let tmp = tempfile::tempdir().unwrap();
    let border = tmp.path().join("border.json");
    let report: serde_json::Value = serde_json::from_str(
        &ok(&[
            "probe",
            "border-prompts",
            "--white-box",
            "--count",
            "40",
            "--max-tokens",
            "1",
            "--out",
            border.to_str().unwrap(),
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    eprintln!(
        "white-box border prompts: {} of {} format pairs, {} prompts",
        report["found"], report["pairs"], report["prompts_written"]
    );
    assert!(report["found"].as_u64().unwrap() >= 3, "{report}");

    // hspi's tokeniser agrees with llama.cpp's on every candidate prompt.
    let candidates = tmp.path().join("candidates.json");
    ok(&[
        "probe",
        "prompts",
        "--count",
        "40",
        "--out",
        candidates.to_str().unwrap(),
    ]);
    let set = hspi_probe::read_probe_set(&candidates).unwrap();
    let bpe = hspi_collect::zoo::bpe::Bpe::from_gguf(&gguf("F32")).unwrap();
    let client = reqwest::blocking::Client::new();

    let isa = format!("cpu-{}", hspi_datasets::provenance::isa_path());
    let mut dirs = Vec::new();
    for quant in FORMATS {
        let server = start("avx2", quant);
        if quant == "F32" {
            for probe in &set.probes {
                let hspi_datasets::ProbeInput::Prompt { text, .. } = &probe.input else {
                    panic!("prompt probes")
                };
                let body = client
                    .post(format!("{}/tokenize", server.url))
                    .header("content-type", "application/json")
                    .body(serde_json::json!({ "content": text }).to_string())
                    .send()
                    .unwrap()
                    .text()
                    .unwrap();
                let theirs: serde_json::Value = serde_json::from_str(&body).unwrap();
                let theirs: Vec<u32> = serde_json::from_value(theirs["tokens"].clone()).unwrap();
                assert_eq!(bpe.encode(text).unwrap(), theirs, "{text:?}");
                assert_eq!(&bpe.decode(&theirs), text);
            }
        }
        let out = tmp.path().join(quant);
        let label = format!(
            "{isa}/llamacpp-{}/{}/bs1",
            common::llama::VERSION.split('.').next().unwrap(),
            quant.to_lowercase()
        );
        let r = run(&[
            "collect",
            "--endpoint",
            &format!("{}/v1/completions", server.url),
            "--model",
            "smollm2",
            "--probes",
            border.to_str().unwrap(),
            "--label",
            &label,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{quant}: {}", r.stderr);
        dirs.push(out.to_str().unwrap().to_string());
    }
    // On llama.cpp, the prompts found on candle split at least half the format pairs by their
    // greedy next token.
    let mut args = vec!["probe", "border-prompts", "--json", "--out"];
    let again = tmp.path().join("again.json");
    args.push(again.to_str().unwrap());
    args.extend(dirs.iter().map(String::as_str));
    let served: serde_json::Value = serde_json::from_str(&ok(&args).stdout).unwrap();
    eprintln!(
        "on llama-server: {} of {} format pairs split",
        served["found"], served["pairs"]
    );
    assert!(served["found"].as_u64().unwrap() >= 3, "{served}");
}
