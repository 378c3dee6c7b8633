//! The format dimension: the numeric format weights and activations are computed in.

use std::fmt;
use std::str::FromStr;

use super::dimension::Dimension;
use super::error::FieldError;
use super::kv_cache::{self, CachedWeights, KvCache, KV_SEPARATOR};

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
        if let Some(cached) = kv_cache::parse(s) {
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
