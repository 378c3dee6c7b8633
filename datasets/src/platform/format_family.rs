//! Formats as routers, providers and model cards write them (`fp16`, `fp8`, `int8`, `int4`,
//! `mxfp4`, …): each names a family of hspi's exact formats, so a claim written in that
//! vocabulary matches every format it covers (`int8` covers GGUF `q8_0`).

use std::fmt;
use std::str::FromStr;

use super::error::FieldError;
use super::{Dimension, NumericFormat};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormatFamily {
    Fp32,
    Fp16,
    Bf16,
    Fp8,
    Int8,
    Int4,
    Fp4,
    MxFp4,
    NvFp4,
    Fp6,
    MxFp8,
}

impl FormatFamily {
    pub const ALL: [FormatFamily; 11] = [
        FormatFamily::Fp32,
        FormatFamily::Fp16,
        FormatFamily::Bf16,
        FormatFamily::Fp8,
        FormatFamily::Int8,
        FormatFamily::Int4,
        FormatFamily::Fp4,
        FormatFamily::MxFp4,
        FormatFamily::NvFp4,
        FormatFamily::Fp6,
        FormatFamily::MxFp8,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FormatFamily::Fp32 => "fp32",
            FormatFamily::Fp16 => "fp16",
            FormatFamily::Bf16 => "bf16",
            FormatFamily::Fp8 => "fp8",
            FormatFamily::Int8 => "int8",
            FormatFamily::Int4 => "int4",
            FormatFamily::Fp4 => "fp4",
            FormatFamily::MxFp4 => "mxfp4",
            FormatFamily::NvFp4 => "nvfp4",
            FormatFamily::Fp6 => "fp6",
            FormatFamily::MxFp8 => "mxfp8",
        }
    }

    /// Whether `format` is one of this family's: its row's family (`FormatSpec::family`) or
    /// that family's parent. 8-bit integers include GGUF's 8-bit blocks and W8A8, 4-bit
    /// integers GGUF's 4-bit blocks (q4_0, q4_1, q4_k, q4_k_m) and W4A16, whatever the group
    /// size; fp8 its weight-only and W8A8 schemes; fp4 NVFP4 and MXFP4. fp6 and mxfp8 cover no
    /// format hspi computes yet.
    pub fn covers(self, format: NumericFormat) -> bool {
        format
            .spec()
            .family
            .is_some_and(|f| f == self || f.parent() == Some(self))
    }

    /// The wider word a family is also sold under (NVFP4 and MXFP4 are both `fp4`).
    pub fn parent(self) -> Option<FormatFamily> {
        match self {
            FormatFamily::NvFp4 | FormatFamily::MxFp4 => Some(FormatFamily::Fp4),
            _ => None,
        }
    }

    /// Whether the family's formats are quantisation schemes that differ in block size, scales,
    /// calibration and activation handling (int8 is GGUF q8_0 and vLLM's W8A8 alike, and their
    /// roundings differ in size by an order of magnitude), unlike the float families whose
    /// rounding the format itself fixes (fp32, fp16, bf16).
    pub fn quantised(self) -> bool {
        !matches!(
            self,
            FormatFamily::Fp32 | FormatFamily::Fp16 | FormatFamily::Bf16
        )
    }

    /// The family `format` belongs to, for reports that print both names (the narrowest one:
    /// `nvfp4` rather than `fp4`).
    pub fn of(format: NumericFormat) -> Option<FormatFamily> {
        format.spec().family
    }
}

impl fmt::Display for FormatFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FormatFamily {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<FormatFamily, FieldError> {
        let s = s.to_ascii_lowercase();
        // Common spellings of the same families.
        let s = match s.as_str() {
            "float32" | "f32" => "fp32",
            "float16" | "half" => "fp16",
            "bfloat16" => "bf16",
            "w8a8" | "w8a16" => "int8",
            "w4a16" | "awq" | "gptq" => "int4",
            other => other,
        };
        FormatFamily::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                FieldError::new(Dimension::Format, format!("unknown format family '{s}'"))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_parse_round_trip() {
        for f in FormatFamily::ALL {
            assert_eq!(f.to_string().parse::<FormatFamily>().unwrap(), f);
        }
        assert_eq!(
            "BFloat16".parse::<FormatFamily>().unwrap(),
            FormatFamily::Bf16
        );
        assert!("fp5".parse::<FormatFamily>().is_err());
    }

    #[test]
    fn families_cover_the_formats_providers_mean() {
        let q = |s: &str| s.parse::<NumericFormat>().unwrap();
        assert!(FormatFamily::Int8.covers(q("q8_0")));
        assert!(FormatFamily::Int8.covers(q("int8")));
        assert!(!FormatFamily::Int8.covers(q("q4_0")));
        for f in ["q4_0", "q4_1", "q4_k", "int4-g32"] {
            assert!(FormatFamily::Int4.covers(q(f)), "{f}");
        }
        assert!(FormatFamily::Fp8.covers(q("fp8-e5m2")));
        assert!(FormatFamily::Fp16.covers(q("f16")) && !FormatFamily::Fp16.covers(q("bf16")));
        assert_eq!(FormatFamily::of(q("q8_0")), Some(FormatFamily::Int8));
        assert_eq!(FormatFamily::of(q("mxint8")), None);
        // The market's schemes: every router word but fp6 and mxfp8 names a format hspi has.
        for (family, formats) in [
            (FormatFamily::Fp8, &["fp8-w8a8", "fp8-w8a16"][..]),
            (FormatFamily::Int8, &["int8-w8a8"][..]),
            (
                FormatFamily::Int4,
                &["int4-w4a16-g64", "int4-w4a16-g128"][..],
            ),
            (FormatFamily::Fp4, &["nvfp4-a16", "nvfp4-w4a4", "mxfp4"][..]),
            (FormatFamily::NvFp4, &["nvfp4-a16", "nvfp4-w4a4"][..]),
            (FormatFamily::MxFp4, &["mxfp4"][..]),
        ] {
            for f in formats {
                assert!(family.covers(q(f)), "{family} {f}");
            }
        }
        assert!(!FormatFamily::MxFp4.covers(q("nvfp4-a16")));
        assert_eq!(FormatFamily::of(q("nvfp4-a16")), Some(FormatFamily::NvFp4));
        assert_eq!(FormatFamily::of(q("mxfp4")), Some(FormatFamily::MxFp4));
        assert!(NumericFormat::all()
            .into_iter()
            .all(|f| !FormatFamily::Fp6.covers(f) && !FormatFamily::MxFp8.covers(f)));
    }

    #[test]
    fn no_router_word_covers_a_quantised_cache() {
        let f: NumericFormat = "f16+kv-q8_0".parse().unwrap();
        assert!(FormatFamily::ALL.iter().all(|fam| !fam.covers(f)));
        assert!(FormatFamily::Fp16.covers(NumericFormat::F16));
    }
}
