//! A language model's vocabulary, of whichever kind its file names (`tokenizer.ggml.model`):
//! byte-level BPE (`gpt2`: SmolLM2, Llama 3, Qwen) or SentencePiece (`llama`: Gemma, Llama 2),
//! with the beginning-of-sequence token llama.cpp puts before every prompt where the file asks
//! for it (`tokenizer.ggml.add_bos_token`; SentencePiece files do unless they say otherwise).

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use candle_core::quantized::gguf_file;

use super::bpe::Bpe;
use super::sentencepiece::SentencePiece;
use crate::error::Result;

pub struct Vocabulary {
    kind: Kind,
    /// The token every prompt starts with, where the model adds one.
    bos: Option<u32>,
    /// Which token prints as which bytes, made when first asked ([`Self::token_printing`]).
    printing: OnceLock<HashMap<Vec<u8>, u32>>,
}

enum Kind {
    Bpe(Box<Bpe>),
    SentencePiece(Box<SentencePiece>),
}

impl Vocabulary {
    /// The vocabulary in `content`, read from the GGUF file at `path` (named in errors).
    pub fn from_content(path: &Path, content: &gguf_file::Content) -> Result<Vocabulary> {
        let meta = |key: &str| content.metadata.get(key);
        let model = match meta("tokenizer.ggml.model") {
            Some(v) => v
                .to_string()
                .map_err(|e| super::bad_gguf(path, format!("tokenizer.ggml.model: {e}")))?
                .clone(),
            None => "gpt2".to_string(),
        };
        let (kind, adds_bos) = match model.as_str() {
            "gpt2" => (
                Kind::Bpe(Box::new(Bpe::from_content(path, content)?)),
                false,
            ),
            "llama" => (
                Kind::SentencePiece(Box::new(SentencePiece::from_content(path, content)?)),
                true,
            ),
            other => {
                return Err(super::bad_gguf(
                    path,
                    format!(
                        "tokenizer.ggml.model '{other}': hspi reads byte-level BPE (gpt2) and \
                         SentencePiece (llama) vocabularies"
                    ),
                ))
            }
        };
        let adds_bos = meta("tokenizer.ggml.add_bos_token")
            .and_then(|v| v.to_bool().ok())
            .unwrap_or(adds_bos);
        let bos = meta("tokenizer.ggml.bos_token_id")
            .and_then(|v| v.to_u32().ok())
            .filter(|_| adds_bos);
        Ok(Vocabulary {
            kind,
            bos,
            printing: OnceLock::new(),
        })
    }

    /// A checkpoint directory's byte-level BPE (`tokenizer.json`).
    pub fn from_bpe(bpe: Bpe) -> Vocabulary {
        Vocabulary {
            kind: Kind::Bpe(Box::new(bpe)),
            bos: None,
            printing: OnceLock::new(),
        }
    }

    /// sha256 over the vocabulary: what token counts (billing) depend on.
    pub fn fingerprint(&self) -> &str {
        match &self.kind {
            Kind::Bpe(v) => v.fingerprint(),
            Kind::SentencePiece(v) => v.fingerprint(),
        }
    }

    /// The token ids of a prompt as llama-server reads it: the beginning-of-sequence token
    /// where the model adds one, then `text` with the control tokens written out in it parsed.
    pub fn prompt_ids(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids: Vec<u32> = self.bos.into_iter().collect();
        ids.extend(match &self.kind {
            Kind::Bpe(v) => v.encode_with_control(text)?,
            Kind::SentencePiece(v) => v.encode_with_control(text)?,
        });
        Ok(ids)
    }

    /// The bytes token `id` prints as in an answer.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        match &self.kind {
            Kind::Bpe(v) => v.token_bytes(id),
            Kind::SentencePiece(v) => v.token_bytes(id),
        }
    }

    /// The token an answer printing exactly `bytes` at one step generated: the piece that
    /// prints them, before a byte token printing the same byte (`\n` and `<0x0A>` in Gemma's
    /// vocabulary; an engine generates the piece, as its tokenizer reads the text). None where no
    /// token prints them.
    pub fn token_printing(&self, bytes: &[u8]) -> Option<u32> {
        let printing = self.printing.get_or_init(|| {
            let (size, byte_token): (usize, &dyn Fn(u32) -> bool) = match &self.kind {
                Kind::Bpe(v) => (v.vocab_size(), &|_| false),
                Kind::SentencePiece(v) => (v.vocab_size(), &|id| v.is_byte_token(id)),
            };
            let mut printing: HashMap<Vec<u8>, u32> = HashMap::new();
            for id in 0..size as u32 {
                let printed = self.token_bytes(id);
                if printed.is_empty() {
                    continue;
                }
                match printing.get(&printed) {
                    Some(other) if !byte_token(*other) || byte_token(id) => {}
                    _ => {
                        printing.insert(printed, id);
                    }
                }
            }
            printing
        });
        printing.get(bytes).copied()
    }

    /// Whether generation stops after token `id`.
    pub fn ends_generation(&self, id: u32) -> bool {
        match &self.kind {
            Kind::Bpe(v) => v.ends_generation(id),
            Kind::SentencePiece(v) => v.ends_generation(id),
        }
    }
}
