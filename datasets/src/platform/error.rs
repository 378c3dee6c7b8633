//! Why a platform string or pattern does not parse. The valid forms are quoted in every message so
//! a user can correct the string.

use thiserror::Error;

use super::dimension::Dimension;

/// The valid forms of a platform string.
pub const PLATFORM_FORMS: &str = "\
HARDWARE/ENGINE/FORMAT[/KERNEL]/bsN
  HARDWARE: cpu-ISA (cpu-avx2, cpu-avx512, cpu-neon, cpu-generic) | cuda-GPU-smXY-NNsm (cuda-h100-pcie-sm90-114sm) | remote-NAME
  ENGINE:   candle[-VERSION] | emu[-VERSION] | cublas[-VERSION] | llamacpp[-VERSION] | vllm[-VERSION] | http[-VERSION]
  FORMAT:   f32 tf32 bf16 f16 fp8-e4m3 fp8-e5m2 int8 int4-g32 int4-g128 mxint8 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q6_k q5_k_m q4_k_m
  KERNEL:   acc-(f32|f16|bf16).(seq|pair|blkK|tcG|lnLxV|ilSxV).skN.(fma|nofma)   e.g. acc-f32.blk32.sk2.fma
            or acc-(f32|f16|bf16) alone: the library (cuBLAS) picks the rest
  bsN:      batch size, e.g. bs1
example: cpu-avx2/candle-0.11.1/bf16/bs1";

/// One field of a platform string that does not parse, and the dimension it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{reason}")]
pub struct FieldError {
    pub dimension: Dimension,
    pub reason: String,
}

impl FieldError {
    pub fn new(dimension: Dimension, reason: String) -> FieldError {
        FieldError { dimension, reason }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid platform '{input}': {reason}\nvalid form:\n{PLATFORM_FORMS}")]
pub struct PlatformParseError {
    pub input: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("claim '{input}' is not HARDWARE/ENGINE/FORMAT[/KERNEL]/bsN: {reason} (use * for a part left open, e.g. */llamacpp/f16/*)")]
pub struct PatternParseError {
    pub input: String,
    pub reason: String,
}

/// Names (versions, GPU and endpoint names) are lowercase letters, digits, '.', '_' or '-'.
pub(crate) fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '_' || c == '-'
        })
}

/// Lowercase and replace every run of other characters by '-', for GPU and endpoint names.
pub fn slugify(name: &str) -> String {
    let mut out = String::new();
    for c in name.to_ascii_lowercase().chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// The fields of a platform string or pattern, split once for both grammars:
/// `[hardware, engine, format, kernel?, batch]`.
/// Errs with a message naming how many parts it found.
pub(crate) fn split_fields(s: &str) -> Result<[Option<&str>; 5], PartCount> {
    let parts: Vec<&str> = s.trim().split('/').collect();
    match parts.as_slice() {
        [h, e, f, b] => Ok([Some(h), Some(e), Some(f), None, Some(b)]),
        [h, e, f, k, b] => Ok([Some(h), Some(e), Some(f), Some(k), Some(b)]),
        _ => Err(PartCount(parts.len())),
    }
}

/// A platform string or pattern with the wrong number of '/'-separated parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("expected 4 or 5 parts separated by '/', found {0}")]
pub struct PartCount(pub usize);
