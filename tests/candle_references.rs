//! References from hspi's own engine when the provider's cannot be run: SmolLM2 through candle
//! (`hspi serve --model smollm2`, collected by `.ci/candle-chat-grid` into
//! datasets/atlas/candle-smollm2-chat/) as the auditor's only classes and references, and
//! llama.cpp (the Xeon grid's AVX2 and AVX-512 builds) as the provider. No candle answer equals a
//! llama.cpp answer bit for bit, so every verdict rests on the format evidence that tolerates a
//! change of engine: the served format is never called wrong, and F16 claimed while Q8_0 or Q4_0
//! is served is caught within 64 output tokens.

mod common;

use common::*;

fn candle(split: &str) -> Vec<String> {
    ["f32", "f16", "q8_0", "q4_0"]
        .iter()
        .map(|f| {
            atlas("candle-smollm2-chat")
                .join(format!("{f}-{split}"))
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn count(t: &serde_json::Value, status: &str) -> u64 {
    tally(t, "format", status)
}

#[test]
fn candle_references_decide_the_format_of_llama_cpp_answers_and_never_wrongly() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("candle.json");
    let mut args = vec!["train", "--out", model.to_str().unwrap()];
    let train = candle("train");
    args.extend(train.iter().map(String::as_str));
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let refs = candle("unseen");
    let mut table = Vec::new();
    for isa in ["avx2", "avx512"] {
        for served in ["f32", "f16", "q8_0", "q4_0"] {
            let set = atlas("llama-xeon-avx512").join(format!("{isa}-{served}-unseen"));
            let claims: &[&str] = if served == "f16" {
                &["f16"]
            } else {
                &[served, "f16"]
            };
            for &claimed in claims {
                let t = audits(&model, &refs, &set, &format!("*/*/{claimed}/*"), 64);
                table.push(format!(
                    "llama.cpp {isa} {served} claimed {claimed}: format {}",
                    t["dimensions"]
                ));
                if served == claimed {
                    assert_eq!(count(&t, "mismatch"), 0, "honest format accused: {t}");
                    // Measured: consistent in 200 of 200 audits for F16 and 199 for Q4_0; an F32
                    // claim is confirmed in 112 (AVX2) and 67 (AVX-512) of 200 within 64 tokens,
                    // inconclusive otherwise. Q8_0 is confirmed only once the answers show its
                    // rounding pattern (classify/src/format_identity.rs): candle's Q8_0 pattern
                    // is 1.6–2 times llama.cpp's in size and shares a third of its direction, so
                    // within 64 tokens Q8_0 is confirmed in 131 (AVX2) and 99 (AVX-512) of 200,
                    // inconclusive otherwise.
                    match served {
                        "f16" | "q4_0" => assert!(count(&t, "consistent") >= 198, "{t}"),
                        "q8_0" => assert!(count(&t, "consistent") >= 80, "{t}"),
                        _ => {}
                    }
                } else if served == "f32" {
                    assert_eq!(count(&t, "consistent"), 0, "F32 passed as F16: {t}");
                } else {
                    assert!(count(&t, "mismatch") >= 198, "{served} passed as F16: {t}");
                }
            }
        }
    }
    eprintln!("{}", table.join("\n"));
}
