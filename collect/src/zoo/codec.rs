//! How a served model reads a request and writes an answer: prompt text to token ids (a chat
//! request through the model's chat template), token ids to the bytes an answer prints.

use crate::error::{CollectError, Result};
use crate::zoo::bpe::Bpe;
use crate::zoo::chat_template::{ChatTemplate, Message};
use crate::zoo::vocabulary::Vocabulary;
use crate::zoo::{Model, TinyLm};

pub enum Codec {
    /// The tiny LM's character vocabulary; a chat request's prompt is its last user message
    /// (the model was trained on plain text, it has no chat format).
    Tiny(TinyLm),
    /// A GGUF model's (or a checkpoint directory's) vocabulary and chat template, as
    /// llama-server uses them.
    Gguf {
        vocab: Box<Vocabulary>,
        template: ChatTemplate,
    },
}

impl Codec {
    pub fn for_model(model: &Model, platform: &hspi_datasets::Platform) -> Result<Codec> {
        Ok(match model {
            Model::Tiny(lm) => Codec::Tiny(lm.clone()),
            Model::Lm { path, .. } => Codec::for_weights(path)?,
            Model::Image(m) => {
                return Err(CollectError::Unsupported {
                    platform: platform.to_string(),
                    model: m.id.clone(),
                    reason:
                        "hspi serve answers chat and completion requests: it serves language models"
                            .into(),
                })
            }
        })
    }

    /// The vocabulary and chat template of a language model's weights: a checkpoint directory's
    /// or a GGUF file's.
    pub fn for_weights(path: &std::path::Path) -> Result<Codec> {
        if path.is_dir() {
            Codec::from_checkpoint(path)
        } else {
            Codec::from_gguf(path)
        }
    }

    /// The vocabulary and chat template of the GGUF file at `path`.
    pub fn from_gguf(path: &std::path::Path) -> Result<Codec> {
        let content = crate::zoo::read_gguf(path)?;
        Ok(Codec::Gguf {
            vocab: Box::new(Vocabulary::from_content(path, &content)?),
            template: ChatTemplate::from_content(path, &content)?,
        })
    }

    /// The vocabulary and chat template of a Hugging Face checkpoint directory.
    pub fn from_checkpoint(dir: &std::path::Path) -> Result<Codec> {
        Ok(Codec::Gguf {
            vocab: Box::new(Vocabulary::from_bpe(Bpe::from_tokenizer_json(dir)?)),
            template: ChatTemplate::from_dir(dir)?,
        })
    }

    /// The tokens a chat request with one user message `prompt` is billed for.
    pub fn chat_prompt_tokens(&self, prompt: &str) -> Result<usize> {
        let user = Message {
            role: "user".into(),
            content: prompt.into(),
        };
        Ok(self.chat_ids(&[user])?.len())
    }

    /// sha256 over the vocabulary (None for the tiny LM's characters).
    pub fn fingerprint(&self) -> Option<&str> {
        match self {
            Codec::Tiny(_) => None,
            Codec::Gguf { vocab, .. } => Some(vocab.fingerprint()),
        }
    }

    /// The prompt of a chat request.
    pub fn chat_ids(&self, messages: &[Message]) -> Result<Vec<u32>> {
        match self {
            Codec::Tiny(lm) => {
                let prompt = messages
                    .iter()
                    .rev()
                    .find(|m| m.role == "user")
                    .map(|m| m.content.as_str())
                    .filter(|p| !p.is_empty())
                    .ok_or_else(|| CollectError::BadRequest("no user message".into()))?;
                lm.encode(prompt)
            }
            Codec::Gguf { vocab, template } => vocab.prompt_ids(&template.render(messages)?),
        }
    }

    /// The prompt of a completion request (control tokens written out are parsed, as
    /// llama-server parses them).
    pub fn text_ids(&self, prompt: &str) -> Result<Vec<u32>> {
        if prompt.is_empty() {
            return Err(CollectError::BadRequest("no prompt".into()));
        }
        match self {
            Codec::Tiny(lm) => lm.encode(prompt),
            Codec::Gguf { vocab, .. } => vocab.prompt_ids(prompt),
        }
    }

    /// The bytes token `id` prints as.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        match self {
            Codec::Tiny(lm) => lm.decode(&[id]).into_bytes(),
            Codec::Gguf { vocab, .. } => vocab.token_bytes(id),
        }
    }

    /// The token an answer printing exactly `bytes` at one step generated (None for the tiny
    /// LM, or where no token prints them).
    pub fn token_printing(&self, bytes: &[u8]) -> Option<u32> {
        match self {
            Codec::Tiny(_) => None,
            Codec::Gguf { vocab, .. } => vocab.token_printing(bytes),
        }
    }

    /// Whether the answer ends after token `id` (end of turn), besides `max_tokens`.
    pub fn ends_generation(&self, id: u32) -> bool {
        match self {
            Codec::Tiny(_) => false,
            Codec::Gguf { vocab, .. } => vocab.ends_generation(id),
        }
    }
}
