//! The formats serving engines sell, as their kernels compute one linear layer: the weights as
//! the published checkpoint stores them (quantised once, from the model's bf16 weights), the
//! activations as the kernel quantises them at run time, the GEMM accumulated in f32 with its
//! output in the model's dtype (bf16, as vLLM serves these formats). Numerics from the engines'
//! sources (shared research `market-formats.md`); each scheme one file, registered in
//! [`SCHEMES`].

mod bf16;
mod fp8;
mod fp8_eager;
mod int4;
mod int8;
mod int8_qdq;
mod int8_truncating;
mod mxfp4;
mod nvfp4;

use hspi_datasets::NumericFormat;

use crate::zoo::decoder_weights::{LayerWeights, ModelConfig};

pub use crate::rounding::{amax, round_bf16, round_fp4_e2m1, round_fp8_e4m3};

/// One format's linear layer. Weights are `[out, in]` row-major (a row is an output channel,
/// quantised along the reduction); activations `[tokens, in]`.
pub trait LinearScheme: Send + Sync {
    fn format(&self) -> NumericFormat;
    /// Quantise and dequantise the weights in place (the values arrive rounded to bf16).
    fn weights(&self, w: &mut [f32], cols: usize);
    /// Quantise layers the engines fuse into one GEMM (a llama's q, k and v; gate and up),
    /// which share any per-tensor scale; each on its own by default.
    fn fused_weights(&self, parts: &mut [&mut [f32]], cols: usize) {
        for w in parts.iter_mut() {
            self.weights(w, cols);
        }
    }
    /// Quantise and dequantise the activations in place, token by token (none by default: the
    /// kernel reads them in the model's dtype).
    fn activations(&self, _x: &mut [f32], _cols: usize) {}
    /// Whether the kernel multiplies integer codes (INT8 W8A8: the served path's integer
    /// product) rather than the dequantised values in f32.
    fn multiplies_integers(&self) -> bool {
        false
    }
    /// Whether a layer `cols` wide can be stored in this format (a group size must divide it).
    fn fits(&self, _cols: usize) -> bool {
        true
    }
    /// Whose forward pass runs around the linear layers (vLLM's CPU path by default).
    fn forward(&self) -> ServedForward {
        ServedForward::Vllm
    }
}

/// The engine whose forward pass the served path follows between the linear layers: where the
/// residual, the rotary embedding and attention round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServedForward {
    /// vLLM's CPU path: the residual summed in f32 into the norm, the rotation and the softmax in
    /// f32 (its fused kernels), their outputs rounded to bf16 (its `_C` library on AVX-512 BF16).
    Vllm,
    /// vLLM's `_C_AVX2` library (CPUs without AVX-512): as [`Self::Vllm`], the rotation's and
    /// attention's outputs cut to bf16 toward zero (no conversion instruction rounds them).
    VllmTruncating,
    /// transformers' eager PyTorch modules on bf16 tensors: the residual rounded before the norm,
    /// the rotation as three bf16 operations, PyTorch's CPU flash attention.
    Transformers,
}

/// Each file's constructor: its scheme for `format`, if it is one of its formats.
type Constructor = fn(NumericFormat) -> Option<Box<dyn LinearScheme>>;

/// Every scheme hspi computes; a new one is one file and one line here.
pub const SCHEMES: [Constructor; 9] = [
    bf16::scheme,
    fp8::scheme,
    fp8_eager::scheme,
    int8::scheme,
    int8_qdq::scheme,
    int8_truncating::scheme,
    int4::scheme,
    nvfp4::scheme,
    mxfp4::scheme,
];

/// The scheme that computes `format`, if hspi has one.
pub fn for_format(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    SCHEMES.iter().find_map(|make| make(format))
}

/// The scheme of `format`'s weights where the served path computes `format`: the market's
/// formats, and bf16 with vLLM's fp8 KV caches (`bf16+kv-fp8-e4m3`: the cache is rounded at run
/// time, the weights are the scheme's). llama.cpp's q8_0 and q4_0 caches are the GGUF pass's.
pub fn serving(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    use hspi_datasets::KvCache;
    match format.kv_cache() {
        None => for_format(format),
        Some(KvCache::Fp8E4m3 | KvCache::Fp8E5m2) => for_format(format.weights()),
        Some(KvCache::Q8_0 | KvCache::Q4_0) => None,
    }
}

/// The formats of the market hspi computes for the zoo's language model, as `pack build
/// --formats` and the candle backend list them: int4 at group 64 only, as SmolLM2's width of 576
/// is no multiple of 128 (the scheme computes any group that divides a model's widths).
pub fn market_formats() -> Vec<NumericFormat> {
    [
        NumericFormat::Bf16,
        NumericFormat::Fp8W8a16,
        NumericFormat::Fp8W8a8,
        NumericFormat::Int8W8a8,
        NumericFormat::Int4W4a16 { group: 64 },
        NumericFormat::NvFp4A16,
        NumericFormat::NvFp4W4a4,
        NumericFormat::MxFp4,
    ]
    .into()
}

/// Other engines' paths of the market format `format` that hspi computes beside it (PyTorch's
/// quantise-dequantise INT8 W8A8 and vLLM's AVX2 library beside vLLM's integer path as its
/// AVX-512 library rounds; PyTorch's FP8 weights in transformers' forward beside FP8 W8A16):
/// packs hold the market's formats, and a fresh audit of a pack holding `format` computes these
/// too.
pub fn engine_paths(format: NumericFormat) -> Vec<NumericFormat> {
    match format {
        NumericFormat::Int8W8a8 => vec![NumericFormat::Int8W8a8Qdq, NumericFormat::Int8W8a8Trunc],
        NumericFormat::Fp8W8a16 => vec![NumericFormat::Fp8W8a16Eager],
        _ => Vec::new(),
    }
}

/// A decoder layer's linear layers rounded to bf16 (the published model's dtype) and quantised by
/// `scheme`, q, k and v as one fused layer and gate and up as another, as the engines run them.
pub fn quantise_layer(layer: &mut LayerWeights, scheme: &dyn LinearScheme, c: &ModelConfig) {
    let (h, i, q) = (c.hidden, c.intermediate, c.heads * c.head_dim());
    for w in [
        &mut layer.q,
        &mut layer.k,
        &mut layer.v,
        &mut layer.o,
        &mut layer.gate,
        &mut layer.up,
        &mut layer.down,
    ] {
        w.iter_mut().for_each(|v| *v = round_bf16(*v));
    }
    scheme.fused_weights(&mut [&mut layer.q, &mut layer.k, &mut layer.v], h);
    scheme.weights(&mut layer.o, q);
    scheme.fused_weights(&mut [&mut layer.gate, &mut layer.up], h);
    scheme.weights(&mut layer.down, i);
}

/// Each row of `xs` (`cols` wide) quantised and dequantised by `f`.
fn per_row(xs: &mut [f32], cols: usize, f: impl Fn(&mut [f32])) {
    xs.chunks_mut(cols.max(1)).for_each(f);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_market_format_has_its_scheme_and_no_other_format_does() {
        for f in market_formats() {
            let s = for_format(f).unwrap_or_else(|| panic!("no scheme for {f}"));
            assert_eq!(s.format(), f);
        }
        for f in NumericFormat::all() {
            let computed = market_formats()
                .into_iter()
                .any(|m| m == f || engine_paths(m).contains(&f));
            if !computed && !matches!(f, NumericFormat::Int4W4a16 { .. }) {
                assert!(for_format(f).is_none(), "{f} has a scheme");
            }
        }
    }

    /// A format's row says it is weight-only exactly where its scheme leaves the activations as
    /// they come; every other quantised scheme rounds them at run time.
    #[test]
    fn weight_only_rows_are_the_schemes_that_leave_activations_alone() {
        let x: Vec<f32> = (0..256)
            .map(|i| round_bf16(((i * 53 % 97) as f32 - 48.0) / 7.0))
            .collect();
        for f in market_formats() {
            let mut y = x.clone();
            for_format(f).unwrap().activations(&mut y, 64);
            let quantised = hspi_datasets::FormatFamily::of(f).is_some_and(|fam| fam.quantised());
            if f.spec().weight_only || !quantised {
                assert_eq!(y, x, "{f}");
            } else {
                assert_ne!(y, x, "{f}");
            }
        }
    }

    #[test]
    fn fp4_rounds_to_nearest_even_on_its_grid_and_saturates() {
        for (x, want) in [
            (0.25, 0.0),
            (0.75, 1.0),
            (1.25, 1.0),
            (1.75, 2.0),
            (2.5, 2.0),
            (3.5, 4.0),
            (5.0, 4.0),
            (7.0, 6.0),
            (-0.3, -0.5),
        ] {
            assert_eq!(round_fp4_e2m1(x), want, "{x}");
        }
    }

    /// Every scheme keeps a row's values near (the quantisation error is bounded by its step),
    /// and the 4-bit ones move them more than the 8-bit ones.
    #[test]
    fn schemes_move_weights_by_their_own_step() {
        let row: Vec<f32> = (0..256)
            .map(|i| round_bf16(((i * 37 % 101) as f32 - 50.0) / 40.0))
            .collect();
        let error = |f: NumericFormat| {
            let mut w = row.clone();
            for_format(f).unwrap().weights(&mut w, 128);
            w.iter()
                .zip(&row)
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f32>()
                / row.len() as f32
        };
        assert_eq!(error(NumericFormat::Bf16), 0.0);
        let e8 = error(NumericFormat::Int8W8a8);
        let e4 = error(NumericFormat::Int4W4a16 { group: 64 });
        let f4 = error(NumericFormat::NvFp4A16);
        assert!(e8 > 0.0 && e8 < e4 && e8 < f4, "{e8} {e4} {f4}");
        assert!(error(NumericFormat::Fp8W8a8) < f4);
        assert!(error(NumericFormat::MxFp4) > e8);
    }
}
