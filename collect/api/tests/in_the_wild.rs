//! Answers as providers document them (tests/fixtures/wild/, one file per shape seen in the
//! wild, written from each provider's documented response format), each parsed with its text,
//! token ids, every logprob's printed digits, and what it says about itself.

use hspi_api::{shape_named, Parsed};
use hspi_datasets::{Outputs, TokenStep};

fn parse(shape: &str, file: &str) -> Parsed {
    let path = format!("{}/tests/fixtures/wild/{file}", env!("CARGO_MANIFEST_DIR"));
    let body = std::fs::read_to_string(&path).unwrap();
    shape_named(shape)
        .unwrap()
        .parse(&body)
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn text_and_steps(p: &Parsed) -> (&str, &[TokenStep]) {
    match &p.outputs {
        Outputs::Completion { text, steps, .. } => (text, steps),
        o => panic!("not a completion: {o:?}"),
    }
}

#[test]
fn openai_chat_keeps_bytes_and_twenty_alternatives() {
    let p = parse("chat", "openai-chat-top20.json");
    let (text, steps) = text_and_steps(&p);
    assert_eq!(text, "Hello!");
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].bytes.as_deref(), Some(&b"Hello"[..]));
    assert_eq!(steps[0].top.len(), 20);
    assert_eq!(steps[0].logprob.as_ref().unwrap().text, "-0.03186");
    assert_eq!(p.system_fingerprint.as_deref(), Some("fp_0ba0d124f1"));
    assert_eq!(p.usage.as_ref().unwrap().completion_tokens, 2);
}

#[test]
fn a_refusal_is_the_answer_with_its_own_logprobs() {
    let p = parse("chat", "openai-chat-refusal.json");
    let (text, steps) = text_and_steps(&p);
    assert_eq!(text, "I'm sorry, I can't help with that.");
    assert_eq!(steps.len(), 2);
    assert!(p.has_logprobs);
}

#[test]
fn legacy_completions_with_text_offsets() {
    let p = parse("completions", "legacy-completions-text-offset.json");
    let (text, steps) = text_and_steps(&p);
    assert_eq!(text, " Paris.");
    assert_eq!(steps[0].token, " Paris");
    assert_eq!(steps[0].top.len(), 3);
    assert_eq!(steps[0].top[0].token, " Paris", "sorted by logprob");
    assert_eq!(steps[1].logprob.as_ref().unwrap().text, "-0.31");
}

#[test]
fn vllm_token_ids_printed_as_tokens_are_read_as_ids() {
    let p = parse("chat", "vllm-chat-token-ids.json");
    let (_, steps) = text_and_steps(&p);
    assert_eq!(steps[0].id, Some(504));
    assert_eq!(steps[0].top[1].id, Some(28));
    assert_eq!(steps[1].id, Some(6321));
}

#[test]
fn sglang_native_generate_reads_meta_info() {
    let body = std::fs::read_to_string(format!(
        "{}/tests/fixtures/sglang.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let p = shape_named("sglang").unwrap().parse(&body).unwrap();
    let (text, steps) = text_and_steps(&p);
    assert_eq!(text, " Paris, the");
    assert_eq!(steps.len(), 3);
    assert_eq!(
        (steps[0].token.as_str(), steps[0].id),
        (" Paris", Some(12366))
    );
    assert_eq!(steps[2].top[1].token, " which");
    assert_eq!(p.usage.as_ref().unwrap().prompt_tokens, 7);
    match &p.outputs {
        Outputs::Completion { finish_reason, .. } => {
            assert_eq!(finish_reason.as_deref(), Some("length"))
        }
        _ => unreachable!(),
    }
    let e = shape_named("sglang")
        .unwrap()
        .parse(r#"{"error": {"message": "model overloaded"}}"#)
        .unwrap_err();
    assert!(e.to_string().contains("model overloaded"), "{e}");
}

#[test]
fn fireworks_raw_output_carries_the_completion_logprobs() {
    let p = parse("chat", "fireworks-raw-output.json");
    let (text, steps) = text_and_steps(&p);
    assert_eq!(text, "Hi there");
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].id, Some(13347));
    assert_eq!(steps[0].top[1].id, Some(9906));
}

#[test]
fn together_prints_the_legacy_shape_with_token_ids_even_for_chat() {
    let p = parse("chat", "together-chat-legacy.json");
    let (text, steps) = text_and_steps(&p);
    assert_eq!(text, "Yes.");
    assert_eq!(steps[0].id, Some(9642));
    assert_eq!(steps[1].top.len(), 2);
}

#[test]
fn null_or_empty_logprobs_are_no_logprobs() {
    for file in ["logprobs-null.json", "logprobs-empty.json"] {
        let p = parse("chat", file);
        assert!(!p.has_logprobs, "{file}");
        assert_eq!(text_and_steps(&p).0, "ok");
    }
}

#[test]
fn fewer_alternatives_than_asked_are_kept_as_they_came() {
    let p = parse("chat", "fewer-alternatives.json");
    let (_, steps) = text_and_steps(&p);
    assert_eq!(steps[0].top.len(), 2);
    assert!(p.has_logprobs);
}
