//! GPT-2 style byte-level BPE, read from a GGUF file's `tokenizer.ggml.tokens` and `.merges`: how
//! SmolLM2 (and llama.cpp serving it) turns prompt text into token ids, so hspi can run prompts on
//! its own white-box platforms.
//!
//! Pre-tokenisation follows llama.cpp's `smollm` rule: every digit alone, then GPT-2's pattern
//! (contractions, ` ?letters`, ` ?other symbols`, whitespace runs that leave their last space to
//! the next word). Cross-checked against llama-server's `/tokenize` in tests/llama_server.rs.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file;
use sha2::Digest;

use crate::error::{CollectError, Result};

pub struct Bpe {
    ids: HashMap<String, u32>,
    tokens: Vec<String>,
    ranks: HashMap<(String, String), usize>,
    byte_char: [char; 256],
    char_byte: HashMap<char, u8>,
    /// Control tokens (`<|im_start|>`, `<|im_end|>`, …): whole in a rendered chat prompt, printed
    /// as nothing in answers (as llama.cpp prints them); longest first.
    control: Vec<(String, u32)>,
    /// The tokens that end a turn (end of sequence, and the chat template's end of turn).
    end_of_generation: Vec<u32>,
    /// sha256 over the vocabulary and the merges: what token counts (billing) depend on.
    fingerprint: String,
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
        // Token type 3 is CONTROL in llama.cpp's vocabulary; a file without types has none.
        let types: Vec<i64> = match content.metadata.get("tokenizer.ggml.token_type") {
            Some(v) => v
                .to_vec()
                .map_err(|e| bad(format!("tokenizer.ggml.token_type: {e}")))?
                .iter()
                .map(|t| t.to_i32().map(i64::from))
                .collect::<candle_core::Result<_>>()
                .map_err(|e| bad(format!("tokenizer.ggml.token_type: {e}")))?,
            None => Vec::new(),
        };
        let control: Vec<u32> = types
            .iter()
            .enumerate()
            .filter(|(_, t)| **t == 3)
            .map(|(i, _)| i as u32)
            .collect();
        let eos = content
            .metadata
            .get("tokenizer.ggml.eos_token_id")
            .and_then(|v| v.to_u32().ok());
        let merges = strings("tokenizer.ggml.merges")?;
        Bpe::new(tokens, &control, eos, merges, &bad)
    }

    /// The vocabulary of a Hugging Face checkpoint directory: `tokenizer.json` (a byte-level BPE
    /// pre-tokenised as SmolLM2's: every digit alone, then GPT-2's pattern), its special added
    /// tokens as control tokens, the end of sequence from `config.json`. Converted from a GGUF
    /// file, it has the GGUF's fingerprint.
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
        if !(pre.contains("\"individual_digits\":true") && pre.contains("ByteLevel")) {
            return Err(bad(format!(
                "pre-tokenizer {pre}: hspi pre-tokenises as SmolLM2 does (digits alone, then byte-level)"
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
        Bpe::new(tokens, &control, eos, merges, &bad)
    }

    fn new(
        tokens: Vec<String>,
        control_ids: &[u32],
        eos: Option<u32>,
        merges: Vec<String>,
        bad: &dyn Fn(String) -> CollectError,
    ) -> Result<Bpe> {
        let mut control: Vec<(String, u32)> = control_ids
            .iter()
            .filter_map(|i| tokens.get(*i as usize).map(|t| (t.clone(), *i)))
            .collect();
        control.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        let end_of_generation = control
            .iter()
            .filter(|(t, id)| Some(*id) == eos || END_OF_TURN.contains(&t.as_str()))
            .map(|(_, id)| *id)
            .collect();
        let mut ranks = HashMap::with_capacity(merges.len());
        for (rank, merge) in merges.iter().enumerate() {
            let (a, b) = merge
                .split_once(' ')
                .ok_or_else(|| bad(format!("merge {rank} is not two symbols: {merge:?}")))?;
            ranks.insert((a.to_string(), b.to_string()), rank);
        }
        let byte_char = byte_chars();
        let mut h = sha2::Sha256::new();
        for t in tokens
            .iter()
            .chain(std::iter::once(&String::new()))
            .chain(&merges)
        {
            h.update(t.as_bytes());
            h.update([0u8]);
        }
        let fingerprint = hex::encode(h.finalize());
        Ok(Bpe {
            fingerprint,
            ids: tokens
                .iter()
                .enumerate()
                .map(|(i, t)| (t.clone(), i as u32))
                .collect(),
            tokens,
            ranks,
            char_byte: byte_char
                .iter()
                .enumerate()
                .map(|(b, c)| (*c, b as u8))
                .collect(),
            byte_char,
            control,
            end_of_generation,
        })
    }

    /// sha256 over the vocabulary and the merges.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Token ids of a rendered chat prompt: control tokens written out in `text` (as chat
    /// templates write them) are those tokens; the text between them is encoded as usual.
    pub fn encode_with_control(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let next = self
                .control
                .iter()
                .filter_map(|(t, id)| rest.find(t.as_str()).map(|at| (at, t.len(), *id)))
                .min_by_key(|(at, _, _)| *at);
            match next {
                Some((at, len, id)) => {
                    ids.extend(self.encode(&rest[..at])?);
                    ids.push(id);
                    rest = &rest[at + len..];
                }
                None => {
                    ids.extend(self.encode(rest)?);
                    rest = "";
                }
            }
        }
        Ok(ids)
    }

    /// The bytes token `id` prints as in an answer: none for a control token.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        if self.control.iter().any(|(_, c)| *c == id) {
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

    /// Whether generation stops after token `id`.
    pub fn ends_generation(&self, id: u32) -> bool {
        self.end_of_generation.contains(&id)
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = Vec::new();
        for piece in pre_tokenize(text) {
            let mut symbols: Vec<String> = piece
                .bytes()
                .map(|b| self.byte_char[b as usize].to_string())
                .collect();
            // Merge the adjacent pair of lowest rank until none is in the merge list.
            while symbols.len() > 1 {
                let best = (0..symbols.len() - 1)
                    .filter_map(|i| {
                        self.ranks
                            .get(&(symbols[i].clone(), symbols[i + 1].clone()))
                            .map(|r| (*r, i))
                    })
                    .min();
                let Some((_, i)) = best else { break };
                let right = symbols.remove(i + 1);
                symbols[i].push_str(&right);
            }
            for s in symbols {
                let id = self.ids.get(&s).ok_or_else(|| CollectError::BadWeights {
                    model: "smollm2".into(),
                    path: "tokenizer".into(),
                    reason: format!("symbol {s:?} of {text:?} is not in the vocabulary"),
                })?;
                ids.push(*id);
            }
        }
        Ok(ids)
    }

    /// The text of `ids`; bytes that are not UTF-8 on their own are replaced.
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids
            .iter()
            .filter_map(|i| self.tokens.get(*i as usize))
            .flat_map(|t| t.chars())
            .filter_map(|c| self.char_byte.get(&c).copied())
            .collect();
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

#[derive(PartialEq, Clone, Copy)]
enum Class {
    Letter,
    Digit,
    Space,
    Other,
}

fn class(c: char) -> Class {
    if c.is_alphabetic() {
        Class::Letter
    } else if c.is_numeric() {
        Class::Digit
    } else if c.is_whitespace() {
        Class::Space
    } else {
        Class::Other
    }
}

const CONTRACTIONS: [&str; 7] = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];

fn pre_tokenize(text: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |i: usize| chars.get(i).map_or(text.len(), |(at, _)| *at);
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = i;
        let rest = &text[chars[i].0..];
        if let Some(c) = CONTRACTIONS.iter().find(|c| rest.starts_with(**c)) {
            i += c.chars().count();
        } else if class(chars[i].1) == Class::Digit {
            i += 1;
        } else {
            // An optional single space joins the run of letters or symbols after it.
            let lead = usize::from(
                chars[i].1 == ' '
                    && chars
                        .get(i + 1)
                        .is_some_and(|(_, c)| matches!(class(*c), Class::Letter | Class::Other)),
            );
            let kind = class(chars[i + lead].1);
            i += lead;
            match kind {
                Class::Letter | Class::Other => {
                    while i < chars.len() && class(chars[i].1) == kind {
                        // Symbols stop where a contraction starts; letters never contain one.
                        if kind == Class::Other
                            && i > start + lead
                            && CONTRACTIONS
                                .iter()
                                .any(|c| text[chars[i].0..].starts_with(c))
                        {
                            break;
                        }
                        i += 1;
                    }
                }
                Class::Space => {
                    let mut j = i;
                    while j < chars.len() && class(chars[j].1) == Class::Space {
                        j += 1;
                    }
                    // Leave the last space to the word after it (`\s+(?!\S)`).
                    i = if j < chars.len() && j - i > 1 {
                        j - 1
                    } else {
                        j
                    };
                }
                Class::Digit => i += 1,
            }
        }
        pieces.push(&text[end_of(start)..end_of(i)]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_tokenisation_follows_the_gpt2_pattern() {
        assert_eq!(
            pre_tokenize("And the king's 12 men,  went!"),
            ["And", " the", " king", "'s", " ", "1", "2", " men", ",", " ", " went", "!"]
        );
        assert_eq!(pre_tokenize("a\n\nb"), ["a", "\n", "\n", "b"]);
    }
}
