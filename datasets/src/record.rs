//! Records: what one target answered to one probe, with the output's exact bits.

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::asked_as::AskedAs;
use crate::platform::Platform;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub probe_id: String,
    /// What answered: `local:MODEL@PLATFORM` or an endpoint URL with the model name.
    pub target: String,
    /// The platform label when known (always for local collection).
    pub platform: Option<Platform>,
    pub outputs: Outputs,
    /// Wall time of the call that produced this record, divided by the batch size.
    pub timing_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// What an endpoint said about itself when answering (model name, fingerprint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<Served>,
    /// How the prompt reached the model (absent from records written before it was kept: see
    /// [`Record::asked_as`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_as: Option<AskedAs>,
}

impl Record {
    /// How the prompt reached the model: as recorded, or read from the target of a record
    /// written before it was kept.
    pub fn asked_as(&self) -> AskedAs {
        self.asked_as
            .unwrap_or_else(|| AskedAs::of_legacy_target(&self.target))
    }

    /// What answered, as EQCs and comparisons name it: the platform label, or the target for an
    /// unlabelled endpoint record.
    pub fn platform_key(&self) -> String {
        self.platform
            .as_ref()
            .map_or_else(|| self.target.clone(), ToString::to_string)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Served {
    pub model: Option<String>,
    pub system_fingerprint: Option<String>,
}

impl Served {
    pub fn from_answer(
        model: Option<String>,
        system_fingerprint: Option<String>,
    ) -> Option<Served> {
        (model.is_some() || system_fingerprint.is_some()).then_some(Served {
            model,
            system_fingerprint,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outputs {
    /// Full output vector; stored as little-endian f32 bytes so every bit survives.
    Logits { values: LogitBits },
    /// Generated token ids alone (text-only evidence).
    Tokens { ids: Vec<u32> },
    /// What a completion endpoint returned: the text, and per generated token its logprob and the
    /// top alternatives when the endpoint returns them (`steps` is empty when it does not).
    Completion {
        text: String,
        steps: Vec<TokenStep>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<String>,
    },
}

impl Outputs {
    /// The same answer, bit for bit: a finish reason counts only where both sides have one (a
    /// teacher-forced reference, computed on an answer's tokens, has none).
    pub fn same_answer(&self, other: &Outputs) -> bool {
        match (self, other) {
            (
                Outputs::Completion {
                    text,
                    steps,
                    finish_reason,
                },
                Outputs::Completion {
                    text: t,
                    steps: s,
                    finish_reason: f,
                },
            ) => {
                text == t
                    && steps == s
                    && (finish_reason.is_none() || f.is_none() || finish_reason == f)
            }
            _ => self == other,
        }
    }
}

/// A logprob as the endpoint printed it. `text` is the JSON number verbatim (nothing lost);
/// `f32_bits` is its value rounded to f32; `exact_f32` says the printed decimal is exactly an f32
/// (llama.cpp prints f32 with 17 digits, so its bits are recoverable). Two are equal when they
/// print the same number, however spelled (`-2.4816930294036865` as a server's JSON prints it,
/// `-2.48169302940368652e0` as hspi's own references do).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Logprob {
    pub text: String,
    pub f32_bits: u32,
    pub exact_f32: bool,
}

impl Logprob {
    pub fn parse(text: &str) -> Result<Logprob, LogprobError> {
        let t = text.trim();
        let not_a_number = || LogprobError::NotANumber(t.to_string());
        let wide: f64 = t.parse().map_err(|_| not_a_number())?;
        let narrow: f32 = t.parse().map_err(|_| not_a_number())?;
        if !wide.is_finite() {
            return Err(LogprobError::NotFinite(t.to_string()));
        }
        Ok(Logprob {
            text: t.to_string(),
            f32_bits: narrow.to_bits(),
            // Exactly an f32 (llama.cpp's 17 digits), or at most 9 significant digits: the
            // shortest print of an f32 (OpenAI, Python's repr of a float32) names one f32.
            exact_f32: narrow as f64 == wide || significant_digits(t) <= 9,
        })
    }

    pub fn value(&self) -> f32 {
        f32::from_bits(self.f32_bits)
    }

    /// The printed number at full width (None only for a record edited by hand).
    fn printed(&self) -> Option<f64> {
        self.text.trim().parse().ok()
    }
}

impl PartialEq for Logprob {
    fn eq(&self, other: &Logprob) -> bool {
        // `exact_f32` follows from the printed number; the bits keep -0 apart from 0.
        self.f32_bits == other.f32_bits
            && (self.text == other.text
                || self.printed().is_some_and(|v| Some(v) == other.printed()))
    }
}

impl Eq for Logprob {}

/// Significant digits of a printed number (`-0.00123e4` has 3).
fn significant_digits(text: &str) -> usize {
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    digits.trim_start_matches('0').trim_end_matches('0').len()
}

/// A printed logprob that is no usable number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogprobError {
    #[error("logprob '{0}' is not a number")]
    NotANumber(String),
    #[error("logprob '{0}' is not finite")]
    NotFinite(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopEntry {
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    pub logprob: Logprob,
}

impl TopEntry {
    /// Where this entry stands in a top list against `other` (see [`top_rank`]).
    pub fn rank(&self, other: &TopEntry) -> std::cmp::Ordering {
        top_rank(
            (self.logprob.value(), &self.token, self.id),
            (other.logprob.value(), &other.token, other.id),
        )
    }
}

/// The one order of a top list, for every path that writes one (an endpoint's answer as parsed,
/// hspi's server, its teacher-forced references): the highest logprob first, equal values by
/// token text, then by id. So the order depends on neither an endpoint's JSON nor an engine's
/// sort, and a reference computed again compares record for record with one collected.
pub fn top_rank(a: (f32, &str, Option<u32>), b: (f32, &str, Option<u32>)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0)
        .then_with(|| a.1.cmp(b.1))
        .then_with(|| a.2.cmp(&b.2))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenStep {
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Vec<u8>>,
    /// The sampled token's logprob (absent in text-only answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprob: Option<Logprob>,
    #[serde(default)]
    pub top: Vec<TopEntry>,
}

impl Outputs {
    /// The bytes that define bit-identity of two outputs.
    pub fn identity_bytes(&self) -> Vec<u8> {
        match self {
            Outputs::Logits { values } => values.to_le_bytes(),
            Outputs::Tokens { ids } => ids.iter().flat_map(|i| i.to_le_bytes()).collect(),
            Outputs::Completion { text, steps, .. } => {
                let mut out = Vec::new();
                let mut put = |b: &[u8]| {
                    out.extend_from_slice(&(b.len() as u64).to_le_bytes());
                    out.extend_from_slice(b);
                };
                put(text.as_bytes());
                for s in steps {
                    put(s.token.as_bytes());
                    put(&s
                        .logprob
                        .as_ref()
                        .map_or([0xff; 4], |l| l.f32_bits.to_le_bytes()));
                    for t in &s.top {
                        put(t.token.as_bytes());
                        put(&t.logprob.f32_bits.to_le_bytes());
                    }
                }
                out
            }
        }
    }
}

/// A vector of f32 kept as raw bits; (de)serialised as base64 of little-endian bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct LogitBits(pub Vec<u32>);

impl LogitBits {
    pub fn from_f32(values: &[f32]) -> LogitBits {
        LogitBits(values.iter().map(|v| v.to_bits()).collect())
    }
    pub fn to_f32(&self) -> Vec<f32> {
        self.0.iter().map(|b| f32::from_bits(*b)).collect()
    }
    pub fn to_le_bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|b| b.to_le_bytes()).collect()
    }
    /// The top label; see [`top_label`].
    pub fn argmax(&self) -> Option<usize> {
        top_label(&self.to_f32())
    }
}

impl Serialize for LogitBits {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(self.to_le_bytes()))
    }
}

impl<'de> Deserialize<'de> for LogitBits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(serde::de::Error::custom)?;
        if bytes.len() % 4 != 0 {
            return Err(serde::de::Error::custom(format!(
                "logit bytes length {} is not a multiple of 4",
                bytes.len()
            )));
        }
        Ok(LogitBits(
            bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ))
    }
}

/// The index of the largest value (None when empty); on an exact tie the lowest index, as numpy,
/// torch and llama.cpp's greedy sampler break ties. Every top-label comparison in hspi uses this one
/// rule, so a border input or a greedy token means the same thing wherever it is checked.
/// Logits (f32) and posteriors (f64) alike.
pub fn top_label<T: Copy + Into<f64>>(values: &[T]) -> Option<usize> {
    (0..values.len()).max_by(|a, b| {
        let (x, y): (f64, f64) = (values[*a].into(), values[*b].into());
        x.total_cmp(&y).then(b.cmp(a))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logprobs_printed_with_17_digits_are_exact_f32() {
        let v = -0.123_456_79f32;
        let printed = format!("{:.17e}", v as f64);
        let lp = Logprob::parse(&printed).unwrap();
        assert!(lp.exact_f32);
        assert_eq!(lp.value(), v);
        // The shortest print of an f32 names it too (OpenAI prints logprobs so).
        let short = Logprob::parse("-0.0009307125").unwrap();
        assert!(short.exact_f32);
        assert_eq!(short.value(), -0.000_930_712_5_f32);
        // Seventeen digits of an f64 no f32 equals: no f32 computation prints it.
        let wide = Logprob::parse("-0.10000000000000001").unwrap();
        assert!(!wide.exact_f32);
        assert!(Logprob::parse("abc").is_err());
    }

    #[test]
    fn logprobs_are_equal_when_they_print_the_same_number() {
        // A server's JSON and hspi's own references spell one f32 differently.
        let served = Logprob::parse("-2.4816930294036865").unwrap();
        let own = Logprob::parse("-2.48169302940368652e0").unwrap();
        assert_eq!(served, own);
        // Another number that rounds to the same f32: a different print, not the same.
        let wider = Logprob::parse("-2.48169303").unwrap();
        assert_eq!(wider.f32_bits, served.f32_bits);
        assert_ne!(wider, served);
        assert_ne!(served, Logprob::parse("-2.4816932").unwrap());
    }

    #[test]
    fn logits_keep_every_bit_including_nan_payloads_and_negative_zero() {
        let bits = vec![0x7fc0_0001, 0x8000_0000, 1, f32::MAX.to_bits(), 0x3f80_0001];
        let rec = Record {
            probe_id: "p".into(),
            target: "t".into(),
            platform: None,
            outputs: Outputs::Logits {
                values: LogitBits(bits.clone()),
            },
            timing_us: 3,
            usage: None,
            served: None,
            asked_as: None,
        };
        let json = serde_json::to_string(&rec).unwrap();
        let back: Record = serde_json::from_str(&json).unwrap();
        match back.outputs {
            Outputs::Logits { values } => assert_eq!(values.0, bits),
            _ => panic!(),
        }
    }
}
