//! Every API shape's request sent to a live server of a kind it names (`ApiShape::served_by`):
//! the seed a fresh audit draws (above 2^63, which vLLM refuses as sent) and every pinned field
//! must be accepted, and the answer must parse with its logprobs.

use hspi_collect::http::{RequestOptions, SHAPES};
use hspi_datasets::{GenerationParams, Outputs};

/// A fresh audit's draw seed as vLLM once refused it (HTTP 400 on `body.seed`).
pub const LARGE_SEED: u64 = 15_816_941_566_597_272_270;

/// Send every shape `server` speaks to `base` (`http://host:port`, the shapes' paths under
/// `/v1`), asking for `model`; returns the names of the shapes sent.
pub fn every_shape_answers(base: &str, model: &str, server: &str) -> Vec<&'static str> {
    let http = reqwest::blocking::Client::new();
    let mut sent = Vec::new();
    for shape in SHAPES.iter().filter(|s| s.served_by().contains(&server)) {
        let params = GenerationParams {
            max_tokens: 4,
            temperature: 0.0,
            top_logprobs: 5,
            seed: Some(LARGE_SEED),
        };
        // vLLM refuses llama.cpp's extensions no more than OpenAI's own fields: both sent.
        let body = shape.body(
            model,
            "And the king said",
            &params,
            &RequestOptions::default(),
        );
        let url = format!("{base}/v1{}", shape.url_suffix());
        let resp = http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = resp.status();
        let text = resp.text().unwrap();
        assert!(
            status.is_success(),
            "{server} refused the {} shape's request: HTTP {status}: {text}\nbody: {body}",
            shape.name()
        );
        let parsed = shape
            .parse(&text)
            .unwrap_or_else(|e| panic!("{server}, {}: {e}\n{text}", shape.name()));
        assert!(parsed.has_logprobs, "{server}, {}: {text}", shape.name());
        let Outputs::Completion { steps, .. } = parsed.outputs else {
            panic!("{server}, {}: not a completion", shape.name())
        };
        assert!(!steps.is_empty(), "{server}, {}", shape.name());
        sent.push(shape.name());
    }
    sent
}
