//! API shapes: how one endpoint wire format is asked (URL path, request body) and how its answers
//! are read (parsed once into outputs and usage). One file per shape behind [`ApiShape`]; the
//! registry [`SHAPES`] is the one place that lists them. To add a shape, copy `openai_chat.rs`
//! and add one line to [`SHAPES`] (CONTRIBUTING.md).

mod envelope;
mod error;
mod logprobs;
mod openai_chat;
mod openai_completions;
mod request;
mod sglang_generate;

pub use envelope::Parsed;
pub use error::ApiError;
pub use openai_chat::OpenAiChat;
pub use openai_completions::OpenAiCompletions;
pub use request::{wire_seed, RequestOptions, MAX_WIRE_SEED};
pub use sglang_generate::SglangGenerate;

use hspi_datasets::{AskedAs, GenerationParams};

/// One endpoint wire format.
pub trait ApiShape: Sync + Send {
    /// The name `--api` takes.
    fn name(&self) -> &'static str;
    /// The URL path it is served at, e.g. `/chat/completions`.
    fn url_suffix(&self) -> &'static str;
    /// How a prompt it sends reaches the model (through the server's chat template, or as raw
    /// text): recorded with each answer, so that answers are compared only with references
    /// asked the same way.
    fn asked_as(&self) -> AskedAs;
    /// The servers that speak it (`llama-server`, `vllm`, `sglang`): the live tests send its
    /// requests to each of these hspi can start.
    fn served_by(&self) -> &'static [&'static str];
    /// The request body for one prompt, generation pinned (temperature and seed from the probe).
    fn body(
        &self,
        model: &str,
        prompt: &str,
        params: &GenerationParams,
        options: &RequestOptions,
    ) -> String;
    /// Read one answer: the outputs with every logprob's printed digits, and the usage billed.
    fn parse(&self, body: &str) -> Result<Parsed, ApiError>;
}

/// Every API shape hspi speaks.
pub static SHAPES: &[&dyn ApiShape] = &[&OpenAiChat, &OpenAiCompletions, &SglangGenerate];

/// The shape named `name` (`--api`).
pub fn shape_named(name: &str) -> Result<&'static dyn ApiShape, ApiError> {
    SHAPES
        .iter()
        .copied()
        .find(|s| s.name() == name)
        .ok_or_else(|| ApiError::UnknownShape {
            name: name.into(),
            known: SHAPES
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The shape whose URL path ends the URL (the longest such suffix), or None.
pub fn shape_for_url(url: &str) -> Option<&'static dyn ApiShape> {
    let path = url.split('?').next().unwrap_or(url).trim_end_matches('/');
    SHAPES
        .iter()
        .copied()
        .filter(|s| path.ends_with(s.url_suffix()))
        .max_by_key(|s| s.url_suffix().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_names_pick_their_shape() {
        let chat = shape_for_url("http://h/v1/chat/completions/").unwrap();
        assert_eq!(chat.name(), "chat");
        let legacy = shape_for_url("http://h/v1/completions?x=1").unwrap();
        assert_eq!(legacy.name(), "completions");
        assert!(shape_for_url("http://h/v1/embeddings").is_none());
        assert_eq!(shape_named("chat").unwrap().name(), "chat");
        let e = shape_named("grpc")
            .err()
            .expect("no such shape")
            .to_string();
        assert!(e.contains("chat, completions, sglang"), "{e}");
    }
}
