//! A GGUF model's chat template (`tokenizer.chat_template`, Jinja), rendered as llama-server
//! renders it with `--jinja`: the messages of a chat request become the prompt text, control
//! tokens written out (`<|im_start|>user\n…`). SmolLM2's template adds a default system message.

use std::path::Path;

use candle_core::quantized::gguf_file;
use serde::Serialize;

use crate::error::{CollectError, Result};

/// One chat message as a request sends it.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

pub struct ChatTemplate {
    source: String,
    bos: String,
    eos: String,
}

impl ChatTemplate {
    /// The template stored in the GGUF file at `path`.
    pub fn from_gguf(path: &Path) -> Result<ChatTemplate> {
        ChatTemplate::from_content(path, &super::read_gguf(path)?)
    }

    /// The template in `content`, read from the GGUF file at `path` (named in errors).
    pub fn from_content(path: &Path, content: &gguf_file::Content) -> Result<ChatTemplate> {
        let bad = |reason: String| super::bad_gguf(path, reason);
        let source = content
            .metadata
            .get("tokenizer.chat_template")
            .ok_or_else(|| bad("no tokenizer.chat_template in its metadata".into()))?
            .to_string()
            .map_err(|e| bad(format!("tokenizer.chat_template: {e}")))?
            .clone();
        let token = |key: &str| -> String {
            let tokens = content
                .metadata
                .get("tokenizer.ggml.tokens")
                .and_then(|v| v.to_vec().ok());
            content
                .metadata
                .get(key)
                .and_then(|v| v.to_u32().ok())
                .and_then(|id| tokens?.get(id as usize)?.to_string().ok().cloned())
                .unwrap_or_default()
        };
        let template = ChatTemplate {
            source,
            bos: token("tokenizer.ggml.bos_token_id"),
            eos: token("tokenizer.ggml.eos_token_id"),
        };
        // A template that does not parse is a fault of the file, found when it loads.
        template
            .render(&[])
            .map_err(|e| bad(format!("tokenizer.chat_template: {e}")))?;
        Ok(template)
    }

    /// The prompt text for `messages`, ending with the assistant's turn opened.
    pub fn render(&self, messages: &[Message]) -> Result<String> {
        let bad = |e: minijinja::Error| CollectError::BadRequest(format!("chat template: {e}"));
        let mut env = minijinja::Environment::new();
        env.add_function(
            "raise_exception",
            |message: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    message,
                ))
            },
        );
        env.add_template("chat", &self.source).map_err(bad)?;
        let template = env.get_template("chat").map_err(bad)?;
        template
            .render(minijinja::context! {
                messages => messages,
                add_generation_prompt => true,
                bos_token => self.bos,
                eos_token => self.eos,
            })
            .map_err(bad)
    }
}
