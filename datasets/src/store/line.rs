//! One record per line, `{…,"check":"<16 hex>"}`: the check is sha256 over the line without it, so
//! a reader can name the exact record that was altered, and pandas still reads the line as JSON.

use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest, Sha256};

const CHECK_KEY: &str = ",\"check\":\"";

fn check_of(body: &str) -> String {
    hex::encode(&Sha256::digest(body.as_bytes())[..8])
}

/// One JSON object per line (records, journal entries), ending in its own check.
pub fn encode_line<T: Serialize>(value: &T) -> String {
    let body = serde_json::to_string(value).expect("hspi's line types always serialise");
    debug_assert!(
        body.ends_with('}'),
        "only JSON objects are written as lines"
    );
    let check = check_of(&body);
    format!("{}{CHECK_KEY}{check}\"}}\n", &body[..body.len() - 1])
}

/// Why a stored line does not decode.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("line does not end with its check field (truncated?)")]
    Truncated,
    #[error("line has no check field")]
    NoCheck,
    #[error("check {0} does not match the record's content")]
    CheckMismatch(String),
    #[error("not a valid entry: {0}")]
    Invalid(#[source] serde_json::Error),
}

pub fn decode_line<T: DeserializeOwned>(line: &str) -> Result<T, LineError> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let inner = line.strip_suffix("\"}").ok_or(LineError::Truncated)?;
    let pos = inner.rfind(CHECK_KEY).ok_or(LineError::NoCheck)?;
    let check = &inner[pos + CHECK_KEY.len()..];
    let body = format!("{}}}", &inner[..pos]);
    if check_of(&body) != check {
        return Err(LineError::CheckMismatch(check.to_string()));
    }
    serde_json::from_str(&body).map_err(LineError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{LogitBits, Outputs, Record};

    fn rec() -> Record {
        Record {
            probe_id: "abc".into(),
            target: "local:m@cpu-avx2/candle/f32/bs1".into(),
            platform: Some("cpu-avx2/candle/f32/bs1".parse().unwrap()),
            outputs: Outputs::Logits {
                values: LogitBits::from_f32(&[1.0, -2.5]),
            },
            timing_us: 12,
            usage: None,
            served: None,
            asked_as: None,
        }
    }

    #[test]
    fn round_trip_and_plain_json() {
        let line = encode_line(&rec());
        assert!(line.ends_with("\"}\n"));
        assert_eq!(decode_line::<Record>(&line).unwrap(), rec());
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["probe_id"], "abc");
    }

    #[test]
    fn any_changed_byte_is_detected() {
        let line = encode_line(&rec());
        for i in 0..line.len() - 1 {
            let mut bytes = line.clone().into_bytes();
            bytes[i] ^= 0x01;
            let Ok(s) = String::from_utf8(bytes) else {
                continue;
            };
            assert!(
                decode_line::<Record>(&s).is_err(),
                "flip at {i} undetected: {s}"
            );
        }
    }

    #[test]
    fn truncation_is_detected() {
        let line = encode_line(&rec());
        for cut in 1..line.len() - 1 {
            assert!(decode_line::<Record>(&line[..cut]).is_err());
        }
    }
}
