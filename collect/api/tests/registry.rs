//! Every registered API shape: builds a pinned request and parses its own fixture
//! (tests/fixtures/NAME.json, an answer as its servers print it) with every logprob's bits.

use hspi_api::{wire_seed, ApiShape, RequestOptions, MAX_WIRE_SEED, SHAPES};
use hspi_datasets::{AskedAs, GenerationParams, Outputs};

const SEED: u64 = 15_816_941_566_597_272_270;

#[test]
fn every_shape_builds_requests_and_parses_its_fixture() {
    assert!(SHAPES.len() >= 3);
    for shape in SHAPES {
        builds_requests_and_parses(*shape, shape.name());
    }
}

/// One shape's pinned request, and its fixture (an answer as its servers print it) parsed with
/// every logprob's bits.
fn builds_requests_and_parses(shape: &dyn ApiShape, fixture: &str) {
    // The live tests send each shape to the servers it names (tests/common/shapes.rs).
    assert!(!shape.served_by().is_empty(), "{}", shape.name());
    let params = GenerationParams {
        max_tokens: 8,
        temperature: 0.0,
        top_logprobs: 5,
        // A fresh audit's draw seed above 2^63: vLLM refuses it as sent (HTTP 400).
        seed: Some(SEED),
    };
    let body: serde_json::Value = serde_json::from_str(&shape.body(
        "m",
        "In the beginning",
        &params,
        &RequestOptions::default(),
    ))
    .unwrap();
    if shape.name() == "sglang" {
        // SGLang's native API: raw text, sampling parameters apart, no model field.
        assert_eq!(body["text"], "In the beginning");
        assert_eq!(body["sampling_params"]["max_new_tokens"], 8);
        assert_eq!(body["sampling_params"]["sampling_seed"], wire_seed(SEED));
        assert_eq!(body["top_logprobs_num"], 5);
    } else {
        assert_eq!(body["model"], "m", "{}", shape.name());
        assert_eq!(body["seed"], wire_seed(SEED), "{}", shape.name());
        assert!(body["seed"].as_u64().unwrap() <= MAX_WIRE_SEED);
        assert_eq!(body["cache_prompt"], false, "{}", shape.name());
        assert_eq!(body["max_tokens"], 8, "{}", shape.name());
    }

    let path = format!(
        "{}/tests/fixtures/{fixture}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: every shape needs a fixture ({e})"));
    let parsed = shape
        .parse(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", shape.name()));
    assert!(parsed.has_logprobs, "{}", shape.name());
    assert!(parsed.usage.is_some(), "{}", shape.name());
    let Outputs::Completion { steps, .. } = parsed.outputs else {
        panic!("{}: not a completion", shape.name())
    };
    assert!(!steps.is_empty(), "{}", shape.name());
    for s in &steps {
        let lp = s.logprob.as_ref().expect("sampled logprob");
        assert_eq!(
            f32::from_bits(lp.f32_bits) as f64,
            lp.text.parse::<f32>().unwrap() as f64,
            "{}: bits from the printed digits",
            shape.name()
        );
        assert!(!s.top.is_empty(), "{}", shape.name());
    }
}

/// How a shape says it asks is what its request does: a chat-templated shape sends the prompt as
/// a user message for the server's template, a raw one sends the prompt text itself. Records
/// written before each kept how it was asked are read from their target URL: for the shapes of
/// that time the reading agrees with the shape.
#[test]
fn every_shape_asks_as_it_says() {
    for shape in SHAPES {
        asks_as_it_says(*shape);
        if ["chat", "completions", "sglang"].contains(&shape.name()) {
            let target = format!("http://127.0.0.1:8080/v1{}#m", shape.url_suffix());
            assert_eq!(
                AskedAs::of_legacy_target(&target),
                shape.asked_as(),
                "{}",
                shape.name()
            );
        }
    }
}

/// A shape's request asks as its `asked_as` says.
fn asks_as_it_says(shape: &dyn ApiShape) {
    const PROMPT: &str = "In the beginning";
    let params = GenerationParams {
        max_tokens: 8,
        temperature: 0.0,
        top_logprobs: 5,
        seed: None,
    };
    let body: serde_json::Value =
        serde_json::from_str(&shape.body("m", PROMPT, &params, &RequestOptions::default()))
            .unwrap();
    let object = body.as_object().unwrap();
    let raw = object.values().any(|v| v == PROMPT);
    let messages = body["messages"].as_array();
    match shape.asked_as() {
        AskedAs::ChatTemplate => {
            let m = messages.unwrap_or_else(|| panic!("{}: no messages", shape.name()));
            assert_eq!(m.last().unwrap()["content"], PROMPT, "{}", shape.name());
            assert!(!raw, "{}: the prompt also sent as text", shape.name());
        }
        AskedAs::RawPrompt => {
            assert!(raw, "{}: the prompt is not sent as text", shape.name());
            assert!(messages.is_none(), "{}: sends messages", shape.name());
        }
        AskedAs::Local => panic!("{}: an endpoint shape is never local", shape.name()),
    }
}

/// A shape added as CONTRIBUTING says (a file like `openai_chat.rs`, changed where it differs):
/// a chat-templated API at `/messages` speaking chat's body and envelope. It passes every check
/// the registered shapes pass, and a record of its answers reads as asked through the chat
/// template although its URL is none the legacy reading knows.
struct Messages;

impl ApiShape for Messages {
    fn name(&self) -> &'static str {
        "messages"
    }
    fn url_suffix(&self) -> &'static str {
        "/messages"
    }
    fn asked_as(&self) -> AskedAs {
        AskedAs::ChatTemplate
    }
    fn served_by(&self) -> &'static [&'static str] {
        &["a test server"]
    }
    fn body(
        &self,
        model: &str,
        prompt: &str,
        params: &GenerationParams,
        options: &RequestOptions,
    ) -> String {
        hspi_api::OpenAiChat.body(model, prompt, params, options)
    }
    fn parse(&self, body: &str) -> Result<hspi_api::Parsed, hspi_api::ApiError> {
        hspi_api::OpenAiChat.parse(body)
    }
}

#[test]
fn a_shape_added_by_the_contributing_guide_passes_the_registry_checks() {
    builds_requests_and_parses(&Messages, "chat");
    asks_as_it_says(&Messages);
    let record = hspi_datasets::Record {
        probe_id: "p".into(),
        target: "https://api.example/v1/messages#m".into(),
        platform: None,
        outputs: Outputs::Completion {
            text: String::new(),
            steps: Vec::new(),
            finish_reason: None,
        },
        timing_us: 0,
        usage: None,
        served: None,
        asked_as: Some(Messages.asked_as()),
    };
    assert_eq!(record.asked_as(), AskedAs::ChatTemplate);
}
