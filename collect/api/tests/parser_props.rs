//! Property tests: the response parsers never panic, reject garbage with a message, and recover
//! every logprob's f32 bits from well-formed answers in both shapes.

use hspi_api::{Parsed, SHAPES};
use hspi_datasets::Outputs;

/// Every shape of the OpenAI envelope reads an answer the same way; the properties below hold
/// for each (SGLang's native shape has its own envelope).
fn parse(body: &str) -> Result<Parsed, String> {
    let all: Vec<Result<Parsed, String>> = SHAPES
        .iter()
        .filter(|s| s.url_suffix().ends_with("completions"))
        .map(|s| s.parse(body).map_err(|e| e.to_string()))
        .collect();
    assert!(
        all.windows(2).all(|w| w[0] == w[1]),
        "shapes disagree on {body:?}"
    );
    all.into_iter().next().expect("at least one shape")
}
use proptest::prelude::*;

fn chat_body(lps: &[f32]) -> String {
    let steps: Vec<String> = lps
        .iter()
        .enumerate()
        .map(|(i, lp)| {
            format!(
                r#"{{"id":{i},"token":"t{i}","bytes":[116],"logprob":{},"top_logprobs":[{{"id":{i},"token":"t{i}","logprob":{}}}]}}"#,
                *lp as f64, *lp as f64
            )
        })
        .collect();
    format!(
        r#"{{"id":"x","model":"m","choices":[{{"index":0,"message":{{"role":"assistant","content":"abc"}},"logprobs":{{"content":[{}]}},"finish_reason":"length"}}],"usage":{{"prompt_tokens":3,"completion_tokens":{}}}}}"#,
        steps.join(","),
        lps.len()
    )
}

fn legacy_body(lps: &[f32]) -> String {
    let tokens: Vec<String> = (0..lps.len()).map(|i| format!("\"t{i}\"")).collect();
    let values: Vec<String> = lps.iter().map(|l| format!("{:.17e}", *l as f64)).collect();
    let tops: Vec<String> = lps
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{{\"t{i}\":{:.17e}}}", *l as f64))
        .collect();
    format!(
        r#"{{"model":"m","choices":[{{"text":"abc","logprobs":{{"tokens":[{}],"token_logprobs":[{}],"top_logprobs":[{}],"text_offset":[]}}}}]}}"#,
        tokens.join(","),
        values.join(","),
        tops.join(",")
    )
}

fn bits(body: &str) -> Vec<u32> {
    match parse(body).unwrap().outputs {
        Outputs::Completion { steps, .. } => steps
            .iter()
            .map(|s| s.logprob.as_ref().unwrap().f32_bits)
            .collect(),
        _ => panic!("not a completion"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&body);
        if let Err(e) = parse(&text) {
            prop_assert!(!e.is_empty());
        }
    }

    #[test]
    fn logprob_bits_survive_both_shapes(lps in proptest::collection::vec(-30.0f32..0.0, 1..12)) {
        let want: Vec<u32> = lps.iter().map(|l| l.to_bits()).collect();
        prop_assert_eq!(bits(&chat_body(&lps)), want.clone());
        prop_assert_eq!(bits(&legacy_body(&lps)), want);
    }

    #[test]
    fn truncated_or_mutated_answers_fail_cleanly(lps in proptest::collection::vec(-30.0f32..0.0, 1..6), cut in 0usize..2000, flip in 0usize..2000, byte in any::<u8>()) {
        let body = chat_body(&lps);
        let cut = cut % body.len();
        let _ = parse(&body[..cut]);
        let mut mutated = body.into_bytes();
        let at = flip % mutated.len();
        mutated[at] = byte;
        let _ = parse(&String::from_utf8_lossy(&mutated));
    }
}

#[test]
fn clear_messages_for_the_usual_failures() {
    let html = parse("<html><body>502 Bad Gateway</body></html>").unwrap_err();
    assert!(html.contains("HTML page"), "{html}");
    let truncated = parse(r#"{"choices":[{"text":"ab"#).unwrap_err();
    assert!(truncated.contains("malformed response"), "{truncated}");
    let err = parse(r#"{"error":{"message":"rate limited"}}"#).unwrap_err();
    assert!(err.contains("rate limited"), "{err}");
    let none = parse(r#"{"model":"m","choices":[{"text":"hi","logprobs":null}]}"#).unwrap();
    assert!(!none.has_logprobs);
    let empty = parse(r#"{"choices":[]}"#).unwrap_err();
    assert!(empty.contains("no choices"), "{empty}");
}

#[test]
fn legacy_alternatives_are_sorted_by_logprob() {
    let body = r#"{"choices":[{"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-0.5],"top_logprobs":[{"z":-0.5,"b":-3.0,"c":-1.25}]}}]}"#;
    let Outputs::Completion { steps, .. } = parse(body).unwrap().outputs else {
        panic!()
    };
    let order: Vec<&str> = steps[0].top.iter().map(|t| t.token.as_str()).collect();
    assert_eq!(order, ["z", "c", "b"]);
}
