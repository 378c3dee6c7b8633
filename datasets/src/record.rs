//! Records: what one target answered to one probe, with the output's exact bits.

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
}

impl Outputs {
    /// The bytes that define bit-identity of two outputs.
    pub fn identity_bytes(&self) -> Vec<u8> {
        match self {
            Outputs::Logits { values } => values.to_le_bytes(),
            Outputs::Tokens { ids } => ids.iter().flat_map(|i| i.to_le_bytes()).collect(),
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
    pub fn argmax(&self) -> Option<usize> {
        let v = self.to_f32();
        (0..v.len()).max_by(|a, b| v[*a].total_cmp(&v[*b]))
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

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        let json = serde_json::to_string(&rec).unwrap();
        let back: Record = serde_json::from_str(&json).unwrap();
        match back.outputs {
            Outputs::Logits { values } => assert_eq!(values.0, bits),
            _ => panic!(),
        }
    }
}
