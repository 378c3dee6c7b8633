//! Byte-level BPE (`tokenizer.ggml.model` `gpt2`: SmolLM2, Llama 3, Qwen), read from a GGUF
//! file's tokens and merges, encoded by Hugging Face's `tokenizers` with the pre-tokenizer
//! llama.cpp uses for the file's `tokenizer.ggml.pre` (SmolLM's digits alone then GPT-2's pattern,
//! Llama 3's and Qwen 2's patterns, GPT-2's), after the control and user-defined tokens written
//! out in the text are split off whole, as llama-server parses a prompt. A pre-tokenizer hspi
//! does not know is refused by name: another split would give other ids than the server's.
//! Cross-checked against llama-server's `/tokenize` in tests/llama_server.rs and
//! tests/architectures.rs.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file;
use sha2::Digest;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use crate::error::{CollectError, Result};

pub struct Bpe {
    tokenizer: Tokenizer,
    tokens: Vec<String>,
    char_byte: HashMap<char, u8>,
    /// Control tokens (`<|im_start|>`, `<|im_end|>`, …): printed as nothing in answers (as
    /// llama.cpp prints them).
    control: Vec<u32>,
    /// The tokens that end a turn (end of sequence, and the chat template's end of turn).
    end_of_generation: Vec<u32>,
    /// sha256 over the vocabulary and the merges: what token counts (billing) depend on.
    fingerprint: String,
}

/// llama.cpp's token types (`llama_token_type`) split off whole before merging.
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// Llama 3's pattern as llama.cpp adapts it (`LLAMA_VOCAB_PRE_TYPE_LLAMA3`).
const LLAMA3: &str = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/// Qwen 2's (`LLAMA_VOCAB_PRE_TYPE_QWEN2`): Llama 3's with every digit alone.
const QWEN2: &str = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/// The pre-tokenizers hspi reads, by llama.cpp's `tokenizer.ggml.pre` names.
pub const PRE_TOKENIZERS: [&str; 5] = ["smollm", "gpt-2", "llama-bpe", "llama3", "qwen2"];

/// The pre-tokenizer llama.cpp applies for `pre`, and whether whole words in the vocabulary
/// skip merging (Llama 3's `ignore_merges`).
fn pre_tokenizer(pre: &str) -> Option<(PreTokenizerWrapper, bool)> {
    let byte_level = |regex: bool| ByteLevel::new(false, true, regex).into();
    let split = |pattern: &str| -> Option<PreTokenizerWrapper> {
        let pattern = SplitPattern::Regex(pattern.to_string());
        Some(
            Split::new(pattern, SplitDelimiterBehavior::Isolated, false)
                .ok()?
                .into(),
        )
    };
    Some(match pre {
        "smollm" => (
            Sequence::new(vec![Digits::new(true).into(), byte_level(true)]).into(),
            false,
        ),
        "gpt-2" => (byte_level(true), false),
        "llama-bpe" | "llama3" => (
            Sequence::new(vec![split(LLAMA3)?, byte_level(false)]).into(),
            true,
        ),
        "qwen2" => (
            Sequence::new(vec![split(QWEN2)?, byte_level(false)]).into(),
            false,
        ),
        _ => return None,
    })
}

impl Bpe {
    pub fn from_gguf(path: &Path) -> Result<Bpe> {
        Bpe::from_content(path, &super::read_gguf(path)?)
    }

    /// The vocabulary in `content`, read from the GGUF file at `path` (named in errors).
    pub fn from_content(path: &Path, content: &gguf_file::Content) -> Result<Bpe> {
        let bad = |reason: String| super::bad_gguf(path, reason);
        let strings = |key: &str| -> Result<Vec<String>> {
            let value = content
                .metadata
                .get(key)
                .ok_or_else(|| bad(format!("no {key} in its metadata")))?;
            let items = value.to_vec().map_err(|e| bad(format!("{key}: {e}")))?;
            items
                .iter()
                .map(|v| v.to_string().cloned())
                .collect::<candle_core::Result<_>>()
                .map_err(|e| bad(format!("{key}: {e}")))
        };
        let tokens = strings("tokenizer.ggml.tokens")?;
        // A file without token types has no control tokens.
        let types: Vec<i32> = match content.metadata.get("tokenizer.ggml.token_type") {
            Some(v) => v
                .to_vec()
                .map_err(|e| bad(format!("tokenizer.ggml.token_type: {e}")))?
                .iter()
                .map(|t| t.to_i32())
                .collect::<candle_core::Result<_>>()
                .map_err(|e| bad(format!("tokenizer.ggml.token_type: {e}")))?,
            None => Vec::new(),
        };
        let eos = content
            .metadata
            .get("tokenizer.ggml.eos_token_id")
            .and_then(|v| v.to_u32().ok());
        let merges = strings("tokenizer.ggml.merges")?;
        let pre = match content.metadata.get("tokenizer.ggml.pre") {
            Some(v) => v
                .to_string()
                .map_err(|e| bad(format!("tokenizer.ggml.pre: {e}")))?
                .clone(),
            None => "default".to_string(),
        };
        let (pre_tokenizer, ignore_merges) = pre_tokenizer(&pre).ok_or_else(|| {
            bad(format!(
                "tokenizer.ggml.pre '{pre}': hspi pre-tokenises as llama.cpp does for {}",
                PRE_TOKENIZERS.join(", ")
            ))
        })?;
        let whole = |kind: i32| -> Vec<u32> {
            types
                .iter()
                .enumerate()
                .filter(|(_, t)| **t == kind)
                .map(|(i, _)| i as u32)
                .collect()
        };
        let (control, user_defined) = (whole(CONTROL), whole(USER_DEFINED));
        let pairs = merges
            .iter()
            .enumerate()
            .map(|(rank, m)| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| bad(format!("merge {rank} is not two symbols: {m:?}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let vocab: tokenizers::models::bpe::Vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let model = BPE::builder()
            .vocab_and_merges(vocab, pairs)
            .ignore_merges(ignore_merges)
            .build()
            .map_err(|e| bad(format!("its BPE vocabulary: {e}")))?;
        let mut tokenizer = Tokenizer::new(model);
        tokenizer.with_pre_tokenizer(Some(pre_tokenizer));
        tokenizer.with_decoder(Some(ByteLevel::default()));
        let specials: Vec<u32> = control.iter().chain(&user_defined).copied().collect();
        Bpe::new(tokenizer, tokens, &specials, control, eos, &merges)
            .map_err(|e| bad(format!("its special tokens: {e}")))
    }

    /// The vocabulary of a Hugging Face checkpoint directory: `tokenizer.json` (a byte-level BPE,
    /// encoded through the pipeline the file writes), its special added tokens as control
    /// tokens, the end of sequence from `config.json`. Converted from a GGUF file, it has the
    /// GGUF's fingerprint.
    pub fn from_tokenizer_json(dir: &Path) -> Result<Bpe> {
        let path = dir.join("tokenizer.json");
        let bad = |reason: String| CollectError::BadWeights {
            model: "tokenizer".into(),
            path: path.clone(),
            reason,
        };
        let text = std::fs::read_to_string(&path).map_err(CollectError::io(&path))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let model = &json["model"];
        if model["type"] != "BPE" {
            return Err(bad(format!(
                "model type {}: hspi reads byte-level BPE",
                model["type"]
            )));
        }
        let pre = json["pre_tokenizer"].to_string();
        if !pre.contains("ByteLevel") {
            return Err(bad(format!(
                "pre-tokenizer {pre}: hspi reads byte-level BPE checkpoints"
            )));
        }
        let vocab = model["vocab"]
            .as_object()
            .ok_or_else(|| bad("no model.vocab".into()))?;
        let added = json["added_tokens"].as_array().cloned().unwrap_or_default();
        let mut by_id: std::collections::BTreeMap<u32, String> = vocab
            .iter()
            .filter_map(|(t, id)| Some((id.as_u64()? as u32, t.clone())))
            .collect();
        let mut control = Vec::new();
        for a in &added {
            let (Some(id), Some(content)) = (a["id"].as_u64(), a["content"].as_str()) else {
                continue;
            };
            by_id.insert(id as u32, content.to_string());
            if a["special"].as_bool() == Some(true) {
                control.push(id as u32);
            }
        }
        let tokens: Vec<String> = by_id.values().cloned().collect();
        if by_id.keys().enumerate().any(|(i, id)| i as u32 != *id) {
            return Err(bad("token ids are not 0..n without gaps".into()));
        }
        let merges = model["merges"]
            .as_array()
            .ok_or_else(|| bad("no model.merges".into()))?
            .iter()
            .map(|m| match m {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Array(pair) => Some(format!(
                    "{} {}",
                    pair.first()?.as_str()?,
                    pair.get(1)?.as_str()?
                )),
                _ => None,
            })
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| bad("a merge is neither \"a b\" nor [a, b]".into()))?;
        let config = dir.join("config.json");
        let eos = std::fs::read_to_string(&config)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|c| c["eos_token_id"].as_u64())
            .map(|id| id as u32);
        // The pipeline as the checkpoint writes it (pre-tokenizer, added tokens).
        let tokenizer = Tokenizer::from_file(&path).map_err(|e| bad(e.to_string()))?;
        Bpe::new(tokenizer, tokens, &control, control.clone(), eos, &merges)
            .map_err(|e| bad(format!("its special tokens: {e}")))
    }

    fn new(
        mut tokenizer: Tokenizer,
        tokens: Vec<String>,
        whole: &[u32],
        control: Vec<u32>,
        eos: Option<u32>,
        merges: &[String],
    ) -> tokenizers::Result<Bpe> {
        let added: Vec<AddedToken> = whole
            .iter()
            .filter_map(|id| tokens.get(*id as usize))
            .map(|t| AddedToken::from(t.clone(), true).normalized(false))
            .collect();
        tokenizer.add_special_tokens(added)?;
        let end_of_generation = control
            .iter()
            .copied()
            .filter(|id| {
                Some(*id) == eos
                    || tokens
                        .get(*id as usize)
                        .is_some_and(|t| END_OF_TURN.contains(&t.as_str()))
            })
            .collect();
        let mut h = sha2::Sha256::new();
        for t in tokens
            .iter()
            .chain(std::iter::once(&String::new()))
            .chain(merges)
        {
            h.update(t.as_bytes());
            h.update([0u8]);
        }
        Ok(Bpe {
            tokenizer,
            tokens,
            char_byte: byte_chars()
                .iter()
                .enumerate()
                .map(|(b, c)| (*c, b as u8))
                .collect(),
            control,
            end_of_generation,
            fingerprint: hex::encode(h.finalize()),
        })
    }

    /// sha256 over the vocabulary and the merges.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Token ids of `text` as llama-server reads a prompt: control and user-defined tokens
    /// written out in it (as chat templates write them) are those tokens; the text between them
    /// is pre-tokenised and merged.
    pub fn encode_with_control(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| CollectError::BadRequest(format!("tokenizing {text:?}: {e}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The same: hspi's prompts hold no control tokens, and llama-server parses them anyway.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.encode_with_control(text)
    }

    /// The bytes token `id` prints as in an answer: none for a control token.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        if self.control.contains(&id) {
            return Vec::new();
        }
        self.tokens
            .get(id as usize)
            .map(|t| {
                t.chars()
                    .filter_map(|c| self.char_byte.get(&c).copied())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many tokens the vocabulary holds.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// Whether generation stops after token `id`.
    pub fn ends_generation(&self, id: u32) -> bool {
        self.end_of_generation.contains(&id)
    }

    /// The text of `ids`; bytes that are not UTF-8 on their own are replaced.
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids.iter().flat_map(|i| self.token_bytes(*i)).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Control tokens that end a chat turn besides the file's end-of-sequence token.
pub(crate) const END_OF_TURN: [&str; 4] =
    ["<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>"];

/// GPT-2's reversible map from bytes to printable characters (a space is `Ġ`).
fn byte_chars() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        map[b as usize] = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(next).expect("below the surrogates");
            next += 1;
            c
        };
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_pre_tokenizer_builds_and_others_are_refused() {
        for pre in PRE_TOKENIZERS {
            assert!(pre_tokenizer(pre).is_some(), "{pre}");
        }
        assert!(pre_tokenizer("deepseek-v3").is_none());
    }
}
