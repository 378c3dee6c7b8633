//! How a prompt reached the model: through the server's chat template, as raw text (legacy
//! completions, SGLang's `/generate`), or computed by hspi itself. The API shape that asked says
//! so (`hspi_api::ApiShape::asked_as`) and each record keeps it. The same prompt asked otherwise
//! is another input: answers are compared only with references asked the same way, and
//! references on an answer's tokens read its prompt the way it was asked.

use serde::{Deserialize, Serialize};

/// How a prompt reached the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskedAs {
    /// An endpoint's chat completions (`…/chat/completions`): the chat template applied.
    ChatTemplate,
    /// Any other endpoint URL: the prompt sent as text.
    RawPrompt,
    /// hspi's own computation (a local target id).
    Local,
}

impl AskedAs {
    /// Read from the target of a record written before records kept how they were asked (an
    /// endpoint URL, with `#model` or a query, or a local id): the shapes hspi spoke then were
    /// chat completions (the template), legacy completions and SGLang's `/generate` (raw text).
    pub fn of_legacy_target(target: &str) -> AskedAs {
        let url = target.split(['#', '?']).next().unwrap_or(target);
        let path = url.trim_end_matches('/');
        if path.ends_with("/chat/completions") {
            AskedAs::ChatTemplate
        } else if path.starts_with("http://") || path.starts_with("https://") {
            AskedAs::RawPrompt
        } else {
            AskedAs::Local
        }
    }

    /// How messages name it ("asked through the chat template").
    pub fn name(self) -> &'static str {
        match self {
            AskedAs::ChatTemplate => "chat template",
            AskedAs::RawPrompt => "raw prompt",
            AskedAs::Local => "local",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_target_says_how_the_prompt_was_asked() {
        for (target, asked) in [
            (
                "http://127.0.0.1:8080/v1/chat/completions#smollm2",
                AskedAs::ChatTemplate,
            ),
            (
                "https://api.example/v1/chat/completions/?x=1",
                AskedAs::ChatTemplate,
            ),
            (
                "http://127.0.0.1:8080/v1/completions#smollm2",
                AskedAs::RawPrompt,
            ),
            ("http://127.0.0.1:30000/generate", AskedAs::RawPrompt),
            (
                "local:smollm2@cpu-avx2/candle-0.11.1/f16/bs1",
                AskedAs::Local,
            ),
        ] {
            assert_eq!(AskedAs::of_legacy_target(target), asked, "{target}");
        }
    }
}
