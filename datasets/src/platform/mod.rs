//! The platform that produced an output, with a short string form that round-trips:
//! `HARDWARE/ENGINE/FORMAT[/KERNEL]/bsN`, e.g. `cpu-avx2/candle-0.11.1/bf16/bs1` or
//! `cpu-avx2/emu/int8/acc-f32.blk32.sk2.fma/bs1`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod dimension;
mod engine;
mod error;
mod format;
mod format_family;
mod format_spec;
mod hardware;
mod kernel;
mod kv_cache;
mod pattern;

pub use dimension::{Dimension, UnknownDimension};
pub use engine::{Engine, EngineKind};
pub use error::{
    slugify, FieldError, PartCount, PatternParseError, PlatformParseError, PLATFORM_FORMS,
};
pub use format::{CachedWeights, GgufType, NumericFormat};
pub use format_family::FormatFamily;
pub use format_spec::{EvidenceClass, FormatSpec};
pub use hardware::Hardware;
pub use kernel::{Accumulator, KernelOptions, ReductionOrder};
pub use kv_cache::KvCache;
pub use pattern::PlatformPattern;

use error::split_fields;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Platform {
    pub hardware: Hardware,
    pub engine: Engine,
    pub format: NumericFormat,
    /// `None` when the engine's kernels are not configurable (candle, llama.cpp, remote).
    pub kernel: Option<KernelOptions>,
    pub batch_size: u32,
}

impl Platform {
    /// Short, filesystem- and shell-safe form (for file names and table columns).
    pub fn slug(&self) -> String {
        self.to_string().replace('/', "_")
    }

    /// A comma-separated list of platform strings.
    pub fn parse_list(list: &str) -> Result<Vec<Platform>, PlatformParseError> {
        list.split(',').map(|p| p.trim().parse()).collect()
    }

    /// A comma-separated list checked and written in canonical form.
    pub fn canonical_list(list: &str) -> Result<Vec<String>, PlatformParseError> {
        Ok(Platform::parse_list(list)?
            .iter()
            .map(ToString::to_string)
            .collect())
    }

    pub fn is_cuda(&self) -> bool {
        matches!(self.hardware, Hardware::Cuda { .. })
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.hardware, self.engine, self.format)?;
        if let Some(k) = &self.kernel {
            write!(f, "/{k}")?;
        }
        write!(f, "/bs{}", self.batch_size)
    }
}

impl FromStr for Platform {
    type Err = PlatformParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: String| PlatformParseError {
            input: s.to_string(),
            reason,
        };
        let field = |e: FieldError| err(e.reason);
        let [hw, engine, format, kernel, bs] = split_fields(s).map_err(|e| err(e.to_string()))?;
        let (hw, engine, format, bs) = (
            hw.unwrap_or_default(),
            engine.unwrap_or_default(),
            format.unwrap_or_default(),
            bs.unwrap_or_default(),
        );
        let batch_size = bs
            .strip_prefix("bs")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| err(format!("batch size '{bs}' is not of the form bsN (N ≥ 1)")))?;
        Ok(Platform {
            hardware: hw.parse().map_err(field)?,
            engine: engine.parse().map_err(field)?,
            format: format.parse().map_err(field)?,
            kernel: kernel.map(str::parse).transpose().map_err(field)?,
            batch_size,
        })
    }
}

impl Serialize for Platform {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Platform {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(s: &str) {
        let p: Platform = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(p.to_string(), s);
        let again: Platform = p.to_string().parse().unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn platform_strings_round_trip() {
        for s in [
            "cpu-avx2/candle-0.11.1/bf16/bs1",
            "cpu-avx512/candle/f32/bs8",
            "cpu-avx2/emu/int8/acc-f32.blk32.sk2.fma/bs1",
            "cpu-generic/emu-0.1.0/int4-g128/acc-bf16.pair.sk1.nofma/bs32",
            "cuda-nvidia-h100-pcie-sm90-114sm/cublas-12.6/tf32/bs8",
            "cuda-a100-sxm4-80gb-sm80-108sm/cublas/f16/acc-f16.seq.sk4.fma/bs1",
            "cuda-nvidia-h100-80gb-hbm3-sm90-132sm/cublas-13.1.0/f16/acc-f16/bs8",
            "remote-api.example.com/http/q4_0/bs1",
            "cpu-avx2/llamacpp-b6000/q8_0/bs1",
            "cpu-avx2/emu-sm90/tf32/acc-f32.tc8.sk2.fma/bs1",
            "cpu-avx2/emu-sm80/bf16/acc-f32.ln32x4.sk1.fma/bs8",
        ] {
            round_trip(s);
        }
    }

    #[test]
    fn every_format_and_kernel_round_trips() {
        for format in NumericFormat::all() {
            for order in [
                ReductionOrder::Sequential,
                ReductionOrder::Pairwise,
                ReductionOrder::Blocked { tile: 64 },
                ReductionOrder::TensorCore { group: 16 },
                ReductionOrder::Lanes {
                    lanes: 16,
                    vector: 4,
                },
                ReductionOrder::Interleaved {
                    slices: 16,
                    vector: 1,
                },
            ] {
                for accumulator in [Accumulator::F32, Accumulator::F16, Accumulator::Bf16] {
                    let p = Platform {
                        hardware: Hardware::Cpu { isa: "avx2".into() },
                        engine: Engine {
                            kind: EngineKind::Emulated,
                            version: None,
                        },
                        format,
                        kernel: Some(KernelOptions {
                            accumulator,
                            order,
                            split_k: 4,
                            fma: false,
                        }),
                        batch_size: 1,
                    };
                    round_trip(&p.to_string());
                }
            }
        }
    }

    #[test]
    fn cuda_compute_capability_with_two_digit_major() {
        let p: Platform = "cuda-b200-sm100-148sm/cublas/bf16/bs1".parse().unwrap();
        match p.hardware {
            Hardware::Cuda {
                compute_capability,
                sm_count,
                ..
            } => {
                assert_eq!(compute_capability, (10, 0));
                assert_eq!(sm_count, 148);
            }
            _ => panic!("not cuda"),
        }
    }

    #[test]
    fn bad_strings_name_the_fault_and_list_forms() {
        let cases = [
            ("cpu-avx2/candle/f33/bs1", "unknown numeric format 'f33'"),
            ("gpu/candle/f32/bs1", "unknown hardware 'gpu'"),
            ("cpu-avx2/torch/f32/bs1", "unknown engine 'torch'"),
            ("cpu-avx2/candle/f32/bs0", "batch size 'bs0'"),
            ("cpu-avx2/candle/f32", "expected 4 or 5 parts"),
            (
                "cpu-avx2/emu/f32/acc-f64.seq.sk1.fma/bs1",
                "accumulator must be",
            ),
            ("cpu-avx2/emu/f32/acc-f64/bs1", "accumulator must be"),
            ("cpu-avx2/emu/f32/acc-f32.seq/bs1", "expected acc-X alone"),
        ];
        for (input, needle) in cases {
            let e = input.parse::<Platform>().unwrap_err().to_string();
            assert!(e.contains(needle), "{input}: {e}");
            assert!(
                e.contains("HARDWARE/ENGINE/FORMAT"),
                "{input}: error lists the forms"
            );
        }
    }

    #[test]
    fn slugify_gpu_names() {
        assert_eq!(slugify("NVIDIA H100 PCIe"), "nvidia-h100-pcie");
        assert_eq!(slugify("  A100-SXM4 (80GB) "), "a100-sxm4-80gb");
    }

    #[test]
    fn serde_uses_the_string_form() {
        let p: Platform = "cpu-avx2/candle/f16/bs1".parse().unwrap();
        let j = serde_json::to_string(&p).unwrap();
        assert_eq!(j, "\"cpu-avx2/candle/f16/bs1\"");
        assert_eq!(serde_json::from_str::<Platform>(&j).unwrap(), p);
    }
}
