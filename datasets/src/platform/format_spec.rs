//! A format's facts in one row: its name, the router family it is sold under, whether only its
//! weights are quantised, and what tells it apart when another engine serves it. Every other
//! table (families, names, the evidence the verifier asks for, the formats `pack build` makes for
//! a router word) reads this one; a new format is a variant and its row here, and the match has
//! no catch-all arm, so a forgotten row does not compile.

use super::format::{GgufType, NumericFormat};
use super::format_family::FormatFamily;

/// What tells a format served by another engine from a format no reference covers (the
/// measured shares each class needs live with the verifier, `hspi_classify::sources::format_identity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvidenceClass {
    /// Its own rounding pattern, kept in good part elsewhere although the activations' rounding
    /// is each engine's own: 8-bit weights.
    Pattern,
    /// Its own rounding pattern, kept almost whole elsewhere: the weights' rounding (the same
    /// on every engine) dominates, as at 4 bits, weight-only or as llama.cpp's 4- and 5-bit
    /// blocks.
    WeightPattern,
    /// Its size alone: the rounding lies in places each engine chooses (bf16 throughout,
    /// activations quantised per token at run time), or the format is a base others differ
    /// from (f32, f16, tf32).
    Size,
}

/// One format's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatSpec {
    /// The name claims, platforms and packs write; for a grouped format (one whose variant
    /// carries a group size, [`NumericFormat::group`]) the stem the group follows (`int4-g` +
    /// `128`).
    pub name: &'static str,
    /// The narrowest router word it is sold under (`nvfp4` rather than `fp4`); none where the
    /// market has no word for it.
    pub family: Option<FormatFamily>,
    /// Whether only the weights are quantised (the activations stay in the model's dtype).
    pub weight_only: bool,
    pub evidence: EvidenceClass,
}

const fn row(
    name: &'static str,
    family: Option<FormatFamily>,
    weight_only: bool,
    evidence: EvidenceClass,
) -> FormatSpec {
    FormatSpec {
        name,
        family,
        weight_only,
        evidence,
    }
}

const fn grouped(name: &'static str, family: FormatFamily, evidence: EvidenceClass) -> FormatSpec {
    FormatSpec {
        name,
        family: Some(family),
        weight_only: true,
        evidence,
    }
}

impl NumericFormat {
    /// This format's row.
    pub const fn spec(self) -> FormatSpec {
        use EvidenceClass::{Pattern, Size, WeightPattern};
        use FormatFamily as Fam;
        use GgufType as G;
        use NumericFormat as F;
        match self {
            F::F32 => row("f32", Some(Fam::Fp32), false, Size),
            F::Tf32 => row("tf32", None, false, Size),
            F::Bf16 => row("bf16", Some(Fam::Bf16), false, Size),
            F::F16 => row("f16", Some(Fam::Fp16), false, Size),
            F::Fp8E4m3 => row("fp8-e4m3", Some(Fam::Fp8), false, Pattern),
            F::Fp8E5m2 => row("fp8-e5m2", Some(Fam::Fp8), false, Pattern),
            F::Fp8W8a16 => row("fp8-w8a16", Some(Fam::Fp8), true, WeightPattern),
            F::Fp8W8a8 => row("fp8-w8a8", Some(Fam::Fp8), false, Size),
            F::Int8 => row("int8", Some(Fam::Int8), false, Pattern),
            F::Int8W8a8 => row("int8-w8a8", Some(Fam::Int8), false, Size),
            F::Int8W8a8Qdq => row("int8-w8a8-qdq", Some(Fam::Int8), false, Size),
            F::Int8W8a8Trunc => row("int8-w8a8-trunc", Some(Fam::Int8), false, Size),
            F::Fp8W8a16Eager => row("fp8-w8a16-eager", Some(Fam::Fp8), true, WeightPattern),
            F::Int4 { .. } => grouped("int4-g", Fam::Int4, WeightPattern),
            F::Int4W4a16 { .. } => grouped("int4-w4a16-g", Fam::Int4, WeightPattern),
            F::MxInt8 => row("mxint8", None, false, Pattern),
            F::NvFp4A16 => row("nvfp4-a16", Some(Fam::NvFp4), true, WeightPattern),
            F::NvFp4W4a4 => row("nvfp4-w4a4", Some(Fam::NvFp4), false, Size),
            F::MxFp4 => row("mxfp4", Some(Fam::MxFp4), true, WeightPattern),
            // llama.cpp's CPU and CUDA kernels quantise the activations to 8-bit blocks for
            // every block type: none of its formats is weight-only.
            F::Gguf(G::Q8_0) => row("q8_0", Some(Fam::Int8), false, Pattern),
            F::Gguf(G::Q4_0) => row("q4_0", Some(Fam::Int4), false, WeightPattern),
            F::Gguf(G::Q4_1) => row("q4_1", Some(Fam::Int4), false, WeightPattern),
            F::Gguf(G::Q5_0) => row("q5_0", None, false, WeightPattern),
            F::Gguf(G::Q5_1) => row("q5_1", None, false, WeightPattern),
            F::Gguf(G::Q4K) => row("q4_k", Some(Fam::Int4), false, WeightPattern),
            // A Q6_K file of a model whose rows fit no 256-block is mostly Q8_0 (SmolLM2's:
            // 181 of 211 matrices): it keeps an 8-bit format's share of its pattern.
            F::Gguf(G::Q6K) => row("q6_k", None, false, Pattern),
            F::Gguf(G::Q5KM) => row("q5_k_m", None, false, WeightPattern),
            F::Gguf(G::Q4KM) => row("q4_k_m", Some(Fam::Int4), false, WeightPattern),
            // The weights' row, sold under no router word (a quantised cache is not what
            // `fp16` promises); the cache's rounding lies in activations each engine computes
            // a little differently, as an 8-bit format's does.
            F::KvCached { weights, .. } => row(weights.format().spec().name, None, false, Pattern),
        }
    }

    /// The group size a grouped format's name carries.
    pub fn group(self) -> Option<u32> {
        match self {
            NumericFormat::Int4 { group } | NumericFormat::Int4W4a16 { group } => Some(group),
            _ => None,
        }
    }

    /// A grouped format at another group size (any other format unchanged).
    pub fn with_group(self, group: u32) -> NumericFormat {
        match self {
            NumericFormat::Int4 { .. } => NumericFormat::Int4 { group },
            NumericFormat::Int4W4a16 { .. } => NumericFormat::Int4W4a16 { group },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_a_row_whose_name_round_trips() {
        for f in NumericFormat::all() {
            let spec = f.spec();
            assert!(f.to_string().starts_with(spec.name), "{f}");
            assert_eq!(f.to_string().parse::<NumericFormat>().unwrap(), f);
        }
        let names: std::collections::HashSet<_> =
            NumericFormat::all().iter().map(|f| f.to_string()).collect();
        assert_eq!(
            names.len(),
            NumericFormat::all().len(),
            "two formats share a name"
        );
    }

    #[test]
    fn weight_only_formats_and_base_formats_are_told_as_the_engines_compute_them() {
        let q = |s: &str| s.parse::<NumericFormat>().unwrap();
        for f in [
            "fp8-w8a16",
            "int4-w4a16-g128",
            "nvfp4-a16",
            "mxfp4",
            "int4-g32",
        ] {
            assert!(q(f).spec().weight_only, "{f}");
        }
        for f in [
            "fp8-w8a8",
            "int8-w8a8",
            "nvfp4-w4a4",
            "q8_0",
            "q4_0",
            "bf16",
        ] {
            assert!(!q(f).spec().weight_only, "{f}");
        }
        // Run-time activation rounding is each engine's own: only size tells those formats.
        for f in ["fp8-w8a8", "int8-w8a8", "nvfp4-w4a4", "bf16"] {
            assert_eq!(q(f).spec().evidence, EvidenceClass::Size, "{f}");
        }
    }
}
