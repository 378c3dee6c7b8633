//! The format dimension: the numeric format weights and activations are computed in.

use std::fmt;
use std::str::FromStr;

use super::dimension::Dimension;
use super::error::FieldError;
use super::kv_cache::{KvCache, KV_SEPARATOR};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NumericFormat {
    F32,
    Tf32,
    Bf16,
    F16,
    Fp8E4m3,
    Fp8E5m2,
    /// FP8 E4M3 weights per output channel, activations not quantised (weight-only, as Marlin
    /// serves FP8 checkpoints on GPUs without FP8 units); bf16 elsewhere.
    Fp8W8a16,
    /// FP8 E4M3 weights per output channel and activations per token at run time, fp32
    /// accumulation (vLLM's `--quantization fp8` and llm-compressor's FP8_DYNAMIC); bf16
    /// elsewhere.
    Fp8W8a8,
    /// Weights per output channel, activations per tensor, symmetric.
    Int8,
    /// INT8 W8A8 as vLLM serves compressed-tensors and SmoothQuant checkpoints: weights per
    /// output channel, activations quantised per token at run time (dynamic), int32 accumulation.
    Int8W8a8,
    /// INT8 W8A8 quantised and dequantised in bf16 around a float GEMM, as compressed-tensors'
    /// own forward runs a W8A8 checkpoint in PyTorch (activation scale amax/127.5).
    Int8W8a8Qdq,
    /// INT8 W8A8 as vLLM's `_C_AVX2` library serves it: [`Self::Int8W8a8`]'s arithmetic, its
    /// rotary embedding's and attention's outputs cut to bf16 toward zero.
    Int8W8a8Trunc,
    /// FP8 weights dequantised to bf16 in transformers' eager forward: PyTorch's answers from an
    /// FP8 checkpoint on CPU, which show no rounding of the activations.
    Fp8W8a16Eager,
    /// Weight-only, group-wise along the reduction dimension.
    Int4 {
        group: u32,
    },
    /// INT4 weight-only in AWQ/GPTQ's layout: asymmetric, a scale and zero point per `group`
    /// weights along the reduction, round to nearest; bf16 activations.
    Int4W4a16 {
        group: u32,
    },
    /// Shared power-of-two exponent per block of 32, 8-bit signed mantissas.
    MxInt8,
    /// NVFP4 weights (E2M1 elements, an E4M3 scale per 16, a global fp32 scale), activations
    /// not quantised (llm-compressor's NVFP4A16).
    NvFp4A16,
    /// NVFP4 weights and activations (per-16 activation scales at run time).
    NvFp4W4a4,
    /// MXFP4 (OCP MX v1.0) weights: E2M1 elements, an E8M0 power-of-two scale per 32; bf16
    /// activations.
    MxFp4,
    Gguf(GgufType),
    /// The weights' format with a KV cache of another (`f16+kv-q8_0`, [`super::kv_cache`]).
    KvCached {
        weights: CachedWeights,
        cache: KvCache,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GgufType {
    Q8_0,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q4K,
    /// llama.cpp's file types, each a mix (`llama-quantize`'s choice per matrix: the output
    /// head and some layers' `attn_v`/`ffn_down` at more bits, rows that fit no 256-block at a
    /// 32-block fallback): Q6_K, Q5_K_M and Q4_K_M.
    Q6K,
    Q5KM,
    Q4KM,
}

impl NumericFormat {
    /// Every format hspi knows, for listings and property tests.
    pub fn all() -> Vec<NumericFormat> {
        use GgufType::*;
        use NumericFormat::*;
        vec![
            F32,
            Tf32,
            Bf16,
            F16,
            Fp8E4m3,
            Fp8E5m2,
            Int8,
            Fp8W8a16,
            Fp8W8a8,
            Int8W8a8,
            Int8W8a8Qdq,
            Int8W8a8Trunc,
            Fp8W8a16Eager,
            Int4 { group: 32 },
            Int4 { group: 128 },
            Int4W4a16 { group: 64 },
            Int4W4a16 { group: 128 },
            MxInt8,
            NvFp4A16,
            NvFp4W4a4,
            MxFp4,
            Gguf(Q8_0),
            Gguf(Q4_0),
            Gguf(Q4_1),
            Gguf(Q5_0),
            Gguf(Q5_1),
            Gguf(Q4K),
            Gguf(Q6K),
            Gguf(Q5KM),
            Gguf(Q4KM),
            KvCached {
                weights: CachedWeights::F16,
                cache: KvCache::Q8_0,
            },
            KvCached {
                weights: CachedWeights::F16,
                cache: KvCache::Q4_0,
            },
        ]
    }

    /// The weights' format (itself where the cache is the weights' own).
    pub fn weights(self) -> NumericFormat {
        match self {
            NumericFormat::KvCached { weights, .. } => weights.format(),
            other => other,
        }
    }

    /// The KV cache's format where it is not the weights' own.
    pub fn kv_cache(self) -> Option<KvCache> {
        match self {
            NumericFormat::KvCached { cache, .. } => Some(cache),
            _ => None,
        }
    }
}

impl fmt::Display for NumericFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let NumericFormat::KvCached { weights, cache } = self {
            return write!(f, "{}{KV_SEPARATOR}{cache}", weights.format());
        }
        let name = self.spec().name;
        match self.group() {
            Some(group) => write!(f, "{name}{group}"),
            None => f.write_str(name),
        }
    }
}

impl FromStr for NumericFormat {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, FieldError> {
        if let Some(cached) = parse_cached(s) {
            return cached;
        }
        let formats = NumericFormat::all();
        // A grouped format's name is its row's stem and any positive group size.
        for f in &formats {
            let Some(g) = s
                .strip_prefix(f.spec().name)
                .filter(|_| f.group().is_some())
            else {
                continue;
            };
            return match g.parse::<u32>() {
                Ok(group) if group > 0 => Ok(f.with_group(group)),
                _ => Err(FieldError::new(
                    Dimension::Format,
                    format!("int4 group '{g}' must be a positive integer"),
                )),
            };
        }
        formats
            .into_iter()
            .find(|f| f.to_string() == s)
            .ok_or_else(|| {
                FieldError::new(Dimension::Format, format!("unknown numeric format '{s}'"))
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
fn parse_cached(s: &str) -> Option<Result<NumericFormat, FieldError>> {
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
    }
}
