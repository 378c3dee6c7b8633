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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cache_name_round_trips_and_an_unknown_one_is_named() {
        for c in KvCache::ALL {
            assert_eq!(c.to_string().parse::<KvCache>().unwrap(), c);
        }
        let e = "q3_k".parse::<KvCache>().unwrap_err();
        assert!(
            e.reason.contains("unknown KV cache format 'q3_k'"),
            "{}",
            e.reason
        );
        assert!(e.reason.contains("q8_0, q4_0"), "{}", e.reason);
    }
}
