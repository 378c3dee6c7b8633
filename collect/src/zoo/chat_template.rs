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

/// What llama-server renders a chat with when the GGUF file holds no template (its ChatML
/// default, as `/props` shows it): Gemma-3-270M's packaged file is one such.
const LLAMA_CPP_DEFAULT: &str = "{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n  {{- '<|im_start|>assistant\\n' -}}\n{%- endif -%}\n";

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

    /// The template of a Hugging Face checkpoint directory: `chat_template.jinja`, else
    /// `tokenizer_config.json`'s `chat_template`, with its `bos_token` and `eos_token`.
    pub fn from_dir(dir: &Path) -> Result<ChatTemplate> {
        let config_path = dir.join("tokenizer_config.json");
        let bad = |path: &Path, reason: String| CollectError::BadWeights {
            model: "chat template".into(),
            path: path.into(),
            reason,
        };
        let config: serde_json::Value = match std::fs::read_to_string(&config_path) {
            Ok(t) => serde_json::from_str(&t).map_err(|e| bad(&config_path, e.to_string()))?,
            Err(_) => serde_json::Value::Null,
        };
        let jinja = dir.join("chat_template.jinja");
        let source = match std::fs::read_to_string(&jinja) {
            Ok(t) => t,
            Err(_) => config["chat_template"]
                .as_str()
                .map(String::from)
                .ok_or_else(|| {
                    bad(
                        dir,
                        "no chat_template.jinja and no chat_template in tokenizer_config.json"
                            .into(),
                    )
                })?,
        };
        // A token is written as a string or as {"content": …}.
        let token = |key: &str| {
            let v = &config[key];
            v.as_str()
                .or_else(|| v["content"].as_str())
                .unwrap_or_default()
                .to_string()
        };
        let template = ChatTemplate {
            source,
            bos: token("bos_token"),
            eos: token("eos_token"),
        };
        template
            .render(&[])
            .map_err(|e| bad(&jinja, format!("chat template: {e}")))?;
        Ok(template)
    }

    /// The template in `content`, read from the GGUF file at `path` (named in errors).
    pub fn from_content(path: &Path, content: &gguf_file::Content) -> Result<ChatTemplate> {
        let bad = |reason: String| super::bad_gguf(path, reason);
        let source = match content.metadata.get("tokenizer.chat_template") {
            Some(v) => v
                .to_string()
                .map_err(|e| bad(format!("tokenizer.chat_template: {e}")))?
                .clone(),
            None => LLAMA_CPP_DEFAULT.to_string(),
        };
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
