//! A SentencePiece vocabulary as llama.cpp reads it from a GGUF file (`tokenizer.ggml.model`
//! `llama`: Gemma, Llama 2, Mistral's older models): tokens with scores, merged pairwise by the
//! score of the piece they make, unknown characters written as byte tokens (`<0xAB>`), spaces
//! as `▁`. Encoded by Hugging Face's `tokenizers` — a BPE whose merges are every split of a
//! normal token into two tokens, ranked by that token's score (how `tokenizers` itself converts
//! SentencePiece models), with byte fallback — after the control and user-defined tokens written
//! out in the text are split off whole, as llama-server parses a prompt. Checked against
//! llama-server's `/tokenize` in tests/gemma3.rs.

use std::path::Path;

use candle_core::quantized::gguf_file;
use sha2::Digest;
use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::Replace;
use tokenizers::{AddedToken, Tokenizer};

use crate::error::{CollectError, Result};

/// llama.cpp's token types (`llama_token_type`).
const NORMAL: i32 = 1;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;
const BYTE: i32 = 6;

pub struct SentencePiece {
    tokenizer: Tokenizer,
    tokens: Vec<String>,
    types: Vec<i32>,
    end_of_generation: Vec<u32>,
    fingerprint: String,
}

impl SentencePiece {
    /// The vocabulary in `content`, read from the GGUF file at `path` (named in errors).
    pub fn from_content(path: &Path, content: &gguf_file::Content) -> Result<SentencePiece> {
        let bad = |reason: String| super::bad_gguf(path, reason);
        let list = |key: &str| -> Result<&Vec<gguf_file::Value>> {
            content
                .metadata
                .get(key)
                .ok_or_else(|| bad(format!("no {key} in its metadata")))?
                .to_vec()
                .map_err(|e| bad(format!("{key}: {e}")))
        };
        let tokens: Vec<String> = list("tokenizer.ggml.tokens")?
            .iter()
            .map(|v| v.to_string().cloned())
            .collect::<candle_core::Result<_>>()
            .map_err(|e| bad(format!("tokenizer.ggml.tokens: {e}")))?;
        let scores: Vec<f32> = list("tokenizer.ggml.scores")?
            .iter()
            .map(|v| v.to_f32())
            .collect::<candle_core::Result<_>>()
            .map_err(|e| bad(format!("tokenizer.ggml.scores: {e}")))?;
        let types: Vec<i32> = list("tokenizer.ggml.token_type")?
            .iter()
            .map(|v| v.to_i32())
            .collect::<candle_core::Result<_>>()
            .map_err(|e| bad(format!("tokenizer.ggml.token_type: {e}")))?;
        if scores.len() != tokens.len() || types.len() != tokens.len() {
            return Err(bad(format!(
                "{} tokens, {} scores, {} token types",
                tokens.len(),
                scores.len(),
                types.len()
            )));
        }
        let eos = content
            .metadata
            .get("tokenizer.ggml.eos_token_id")
            .and_then(|v| v.to_u32().ok());
        SentencePiece::new(tokens, scores, types, eos)
            .map_err(|e| bad(format!("its SentencePiece vocabulary: {e}")))
    }

    fn new(
        tokens: Vec<String>,
        scores: Vec<f32>,
        types: Vec<i32>,
        eos: Option<u32>,
    ) -> tokenizers::Result<SentencePiece> {
        let ids: tokenizers::models::bpe::Vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        // Every split of a normal token into two tokens merges into it, the best-scored
        // tokens' merges first (llama.cpp's SPM merges the adjacent pair whose piece scores
        // highest).
        let mut normal: Vec<usize> = (0..tokens.len()).filter(|i| types[*i] == NORMAL).collect();
        normal.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
        let mut merges = Vec::new();
        for i in normal {
            let piece = &tokens[i];
            for (at, _) in piece.char_indices().skip(1) {
                let (left, right) = piece.split_at(at);
                if ids.contains_key(left) && ids.contains_key(right) {
                    merges.push((left.to_string(), right.to_string()));
                }
            }
        }
        let bpe = BPE::builder()
            .vocab_and_merges(ids, merges)
            .byte_fallback(true)
            .build()?;
        let mut tokenizer = Tokenizer::new(bpe);
        tokenizer.with_normalizer(Some(Replace::new(" ", "▁")?))?;
        // Control tokens (parsed in prompts, as llama-server parses them) and user-defined ones
        // (newline and tab runs, image markers: always whole) are split off before merging.
        let whole: Vec<AddedToken> = tokens
            .iter()
            .zip(&types)
            .filter(|(_, t)| **t == CONTROL || **t == USER_DEFINED)
            .map(|(text, _)| AddedToken::from(text.clone(), true).normalized(false))
            .collect();
        tokenizer.add_special_tokens(whole)?;
        let end_of_generation = tokens
            .iter()
            .enumerate()
            .filter(|(i, t)| {
                types[*i] == CONTROL
                    && (Some(*i as u32) == eos || super::bpe::END_OF_TURN.contains(&t.as_str()))
            })
            .map(|(i, _)| i as u32)
            .collect();
        let mut h = sha2::Sha256::new();
        for ((t, s), ty) in tokens.iter().zip(&scores).zip(&types) {
            h.update(t.as_bytes());
            h.update([0u8]);
            h.update(s.to_le_bytes());
            h.update(ty.to_le_bytes());
        }
        Ok(SentencePiece {
            tokenizer,
            tokens,
            types,
            end_of_generation,
            fingerprint: hex::encode(h.finalize()),
        })
    }

    /// sha256 over the tokens, their scores and types.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Token ids of `text`, control tokens written out in it parsed whole.
    pub fn encode_with_control(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| CollectError::BadRequest(format!("tokenizing {text:?}: {e}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The bytes token `id` prints as in an answer: none for a control token, its byte for a
    /// byte token, its text with `▁` as a space otherwise.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        let (Some(text), Some(kind)) = (self.tokens.get(id as usize), self.types.get(id as usize))
        else {
            return Vec::new();
        };
        match *kind {
            CONTROL => Vec::new(),
            BYTE => text
                .strip_prefix("<0x")
                .and_then(|t| t.strip_suffix('>'))
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .map(|b| vec![b])
                .unwrap_or_default(),
            _ => text.replace('▁', " ").into_bytes(),
        }
    }

    /// How many tokens the vocabulary holds.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// Whether token `id` is a byte token (`<0x0A>`), which prints as one byte a piece may
    /// print too.
    pub fn is_byte_token(&self, id: u32) -> bool {
        self.types.get(id as usize) == Some(&BYTE)
    }

    /// Whether generation stops after token `id`.
    pub fn ends_generation(&self, id: u32) -> bool {
        self.end_of_generation.contains(&id)
    }
}
