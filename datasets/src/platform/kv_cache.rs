//! The KV cache's format, where it is not the weights' own: llama.cpp's `-ctk/-ctv q8_0` (or
//! `q4_0`) and vLLM's `--kv-cache-dtype fp8` keep the weights' format and round every key and
//! value an attention reads. A format with such a cache is written `WEIGHTS+kv-CACHE`
//! (`f16+kv-q8_0`): it is a format of its own, never covered by the weights' router word, so a
//! provider who quantises its cache while claiming `f16` is a format mismatch, and one who
//! declares it can claim exactly that.

use std::fmt;
use std::str::FromStr;

use super::dimension::Dimension;
use super::error::FieldError;
use super::format::{GgufType, NumericFormat};

/// The separator between the weights' format and the cache's in a format's name.
pub const KV_SEPARATOR: &str = "+kv-";

/// What each cached key and value is rounded to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KvCache {
    /// llama.cpp's 8-bit blocks: 32 values, one f16 scale (`-ctk q8_0 -ctv q8_0`).
    Q8_0,
    /// llama.cpp's 4-bit blocks: 32 values, one f16 scale, levels −8…7.
    Q4_0,
    /// vLLM's `fp8` / `fp8_e4m3`.
    Fp8E4m3,
    /// vLLM's `fp8_e5m2`.
    Fp8E5m2,
}

impl KvCache {
    pub const ALL: [KvCache; 4] = [
        KvCache::Q8_0,
        KvCache::Q4_0,
        KvCache::Fp8E4m3,
        KvCache::Fp8E5m2,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            KvCache::Q8_0 => "q8_0",
            KvCache::Q4_0 => "q4_0",
            KvCache::Fp8E4m3 => "fp8-e4m3",
            KvCache::Fp8E5m2 => "fp8-e5m2",
        }
    }
}

impl fmt::Display for KvCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for KvCache {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<KvCache, FieldError> {
        KvCache::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = KvCache::ALL.iter().map(|c| c.name()).collect();
                FieldError::new(
                    Dimension::Format,
                    format!(
                        "unknown KV cache format '{s}' (known: {})",
                        known.join(", ")
                    ),
                )
            })
    }
}

/// The weights' formats a quantised cache is named beside: the float formats and llama.cpp's
/// (the market's schemes name their own activation handling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CachedWeights {
    F32,
    Bf16,
    F16,
    Gguf(GgufType),
}

impl CachedWeights {
    pub const fn format(self) -> NumericFormat {
        match self {
            CachedWeights::F32 => NumericFormat::F32,
            CachedWeights::Bf16 => NumericFormat::Bf16,
            CachedWeights::F16 => NumericFormat::F16,
            CachedWeights::Gguf(t) => NumericFormat::Gguf(t),
        }
    }

    /// The weights of `format`, where a quantised cache can be named beside it.
    pub fn of(format: NumericFormat) -> Option<CachedWeights> {
        Some(match format {
            NumericFormat::F32 => CachedWeights::F32,
            NumericFormat::Bf16 => CachedWeights::Bf16,
            NumericFormat::F16 => CachedWeights::F16,
            NumericFormat::Gguf(t) => CachedWeights::Gguf(t),
            _ => return None,
        })
    }
}

/// `WEIGHTS+kv-CACHE` read, where `s` names a cache; None where it does not.
pub(super) fn parse(s: &str) -> Option<Result<NumericFormat, FieldError>> {
    let (weights, cache) = s.split_once(KV_SEPARATOR)?;
    Some((|| {
        let format: NumericFormat = weights.parse()?;
        let weights = CachedWeights::of(format).ok_or_else(|| {
            FieldError::new(
                Dimension::Format,
                format!(
                    "a KV cache is named beside f32, bf16, f16 or a llama.cpp type, not '{format}'"
                ),
            )
        })?;
        Ok(NumericFormat::KvCached {
            weights,
            cache: cache.parse()?,
        })
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_format_round_trips_and_keeps_its_weights() {
        for s in [
            "f16+kv-q8_0",
            "f16+kv-q4_0",
            "q4_k_m+kv-q8_0",
            "bf16+kv-fp8-e4m3",
            "f32+kv-fp8-e5m2",
        ] {
            let f: NumericFormat = s.parse().unwrap_or_else(|e| panic!("{s}: {e:?}"));
            assert_eq!(f.to_string(), s);
            assert_eq!(f.weights().to_string(), s.split('+').next().unwrap());
            assert_eq!(
                f.kv_cache().map(|c| c.to_string()).as_deref(),
                s.split("+kv-").nth(1)
            );
        }
        assert_eq!("f16".parse::<NumericFormat>().unwrap().kv_cache(), None);
    }

    #[test]
    fn a_cache_beside_a_market_scheme_or_of_an_unknown_type_is_refused_by_name() {
        let e = "int8-w8a8+kv-q8_0".parse::<NumericFormat>().unwrap_err();
        assert!(e.reason.contains("not 'int8-w8a8'"), "{}", e.reason);
        let e = "f16+kv-q3_k".parse::<NumericFormat>().unwrap_err();
        assert!(
            e.reason.contains("unknown KV cache format 'q3_k'"),
            "{}",
            e.reason
        );
        assert!(e.reason.contains("q8_0, q4_0"), "{}", e.reason);
    }

    #[test]
    fn no_router_word_covers_a_quantised_cache() {
        use super::super::FormatFamily;
        let f: NumericFormat = "f16+kv-q8_0".parse().unwrap();
        assert!(FormatFamily::ALL.iter().all(|fam| !fam.covers(f)));
        // The plain weights' format stays covered.
        assert!(FormatFamily::Fp16.covers(NumericFormat::F16));
    }
}
