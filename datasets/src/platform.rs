//! The platform that produced an output, with a short string form that round-trips:
//! `HARDWARE/ENGINE/FORMAT[/KERNEL]/bsN`, e.g. `cpu-avx2/candle-0.11.1/bf16/bs1` or
//! `cpu-avx2/emu/int8/acc-f32.blk32.sk2.fma/bs1`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::PlatformParseError;

/// The valid forms, quoted in every parse error so a user can correct the string.
pub const PLATFORM_FORMS: &str = "\
HARDWARE/ENGINE/FORMAT[/KERNEL]/bsN
  HARDWARE: cpu-ISA (cpu-avx2, cpu-avx512, cpu-neon, cpu-generic) | cuda-GPU-smXY-NNsm (cuda-h100-pcie-sm90-114sm) | remote-NAME
  ENGINE:   candle[-VERSION] | emu[-VERSION] | cublas[-VERSION] | llamacpp[-VERSION] | vllm[-VERSION] | http[-VERSION]
  FORMAT:   f32 tf32 bf16 f16 fp8-e4m3 fp8-e5m2 int8 int4-g32 int4-g128 mxint8 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q6_k
  KERNEL:   acc-(f32|f16|bf16).(seq|pair|blkK).skN.(fma|nofma)   e.g. acc-f32.blk32.sk2.fma
            or acc-(f32|f16|bf16) alone: the library (cuBLAS) picks the rest
  bsN:      batch size, e.g. bs1
example: cpu-avx2/candle-0.11.1/bf16/bs1";

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Platform {
    pub hardware: Hardware,
    pub engine: Engine,
    pub format: NumericFormat,
    /// `None` when the engine's kernels are not configurable (candle, llama.cpp, remote).
    pub kernel: Option<KernelOptions>,
    pub batch_size: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hardware {
    /// `isa` is the instruction-set path actually used (avx2, avx512, neon, generic).
    Cpu { isa: String },
    Cuda {
        gpu: String,
        compute_capability: (u32, u32),
        sm_count: u32,
    },
    /// An endpoint whose hardware is what we want to find out.
    Remote { name: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineKind {
    Candle,
    Emulated,
    Cublas,
    LlamaCpp,
    Vllm,
    Http,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Engine {
    pub kind: EngineKind,
    pub version: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NumericFormat {
    F32,
    Tf32,
    Bf16,
    F16,
    Fp8E4m3,
    Fp8E5m2,
    /// Weights per output channel, activations per tensor, symmetric.
    Int8,
    /// Weight-only, group-wise along the reduction dimension.
    Int4 {
        group: u32,
    },
    /// Shared power-of-two exponent per block of 32, 8-bit signed mantissas.
    MxInt8,
    Gguf(GgufType),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GgufType {
    Q8_0,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q4K,
    Q6K,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Accumulator {
    F32,
    F16,
    Bf16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReductionOrder {
    Sequential,
    Pairwise,
    Blocked {
        tile: u32,
    },
    /// The library picks order, split-K and FMA itself (cuBLAS heuristics, which vary with the
    /// GPU and the problem shape); only the accumulator type is asked for.
    Library,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelOptions {
    pub accumulator: Accumulator,
    pub order: ReductionOrder,
    pub split_k: u32,
    pub fma: bool,
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions {
            accumulator: Accumulator::F32,
            order: ReductionOrder::Sequential,
            split_k: 1,
            fma: true,
        }
    }
}

impl Platform {
    /// Short, filesystem- and shell-safe form (for file names and table columns).
    pub fn slug(&self) -> String {
        self.to_string().replace('/', "_")
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
        let parts: Vec<&str> = s.trim().split('/').collect();
        let (hw, engine, format, kernel, bs) = match parts.as_slice() {
            [hw, engine, format, bs] => (*hw, *engine, *format, None, *bs),
            [hw, engine, format, kernel, bs] => (*hw, *engine, *format, Some(*kernel), *bs),
            _ => {
                return Err(err(format!(
                    "expected 4 or 5 parts separated by '/', found {}",
                    parts.len()
                )))
            }
        };
        let batch_size = bs
            .strip_prefix("bs")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| err(format!("batch size '{bs}' is not of the form bsN (N ≥ 1)")))?;
        Ok(Platform {
            hardware: hw.parse().map_err(err)?,
            engine: engine.parse().map_err(err)?,
            format: format.parse().map_err(err)?,
            kernel: kernel.map(str::parse).transpose().map_err(err)?,
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

fn is_slug(s: &str) -> bool {
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

impl fmt::Display for Hardware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hardware::Cpu { isa } => write!(f, "cpu-{isa}"),
            Hardware::Cuda {
                gpu,
                compute_capability: (major, minor),
                sm_count,
            } => write!(f, "cuda-{gpu}-sm{major}{minor}-{sm_count}sm"),
            Hardware::Remote { name } => write!(f, "remote-{name}"),
        }
    }
}

impl FromStr for Hardware {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(isa) = s.strip_prefix("cpu-") {
            if isa
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && !isa.is_empty()
            {
                return Ok(Hardware::Cpu {
                    isa: isa.to_string(),
                });
            }
            return Err(format!(
                "cpu instruction set '{isa}' must be lowercase letters and digits"
            ));
        }
        if let Some(rest) = s.strip_prefix("cuda-") {
            let bad = || format!("cuda hardware '{s}' is not of the form cuda-GPU-smXY-NNsm");
            let mut it = rest.rsplitn(3, '-');
            let sms = it.next().ok_or_else(bad)?;
            let cc = it.next().ok_or_else(bad)?;
            let gpu = it.next().ok_or_else(bad)?;
            let sm_count = sms
                .strip_suffix("sm")
                .and_then(|n| n.parse().ok())
                .ok_or_else(bad)?;
            let digits = cc
                .strip_prefix("sm")
                .filter(|d| d.len() >= 2)
                .ok_or_else(bad)?;
            let (major, minor) = digits.split_at(digits.len() - 1);
            let compute_capability = (
                major.parse().map_err(|_| bad())?,
                minor.parse().map_err(|_| bad())?,
            );
            if !is_slug(gpu) {
                return Err(bad());
            }
            return Ok(Hardware::Cuda {
                gpu: gpu.to_string(),
                compute_capability,
                sm_count,
            });
        }
        if let Some(name) = s.strip_prefix("remote-") {
            if is_slug(name) {
                return Ok(Hardware::Remote {
                    name: name.to_string(),
                });
            }
            return Err(format!(
                "remote name '{name}' must be lowercase letters, digits, '.', '_' or '-'"
            ));
        }
        Err(format!(
            "unknown hardware '{s}' (expected cpu-ISA, cuda-… or remote-NAME)"
        ))
    }
}

impl EngineKind {
    pub const ALL: [EngineKind; 6] = [
        EngineKind::Candle,
        EngineKind::Emulated,
        EngineKind::Cublas,
        EngineKind::LlamaCpp,
        EngineKind::Vllm,
        EngineKind::Http,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Candle => "candle",
            EngineKind::Emulated => "emu",
            EngineKind::Cublas => "cublas",
            EngineKind::LlamaCpp => "llamacpp",
            EngineKind::Vllm => "vllm",
            EngineKind::Http => "http",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}-{v}", self.kind.as_str()),
            None => f.write_str(self.kind.as_str()),
        }
    }
}

impl FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, version) = match s.split_once('-') {
            Some((k, v)) => (k, Some(v)),
            None => (s, None),
        };
        let kind = EngineKind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind)
            .ok_or_else(|| format!("unknown engine '{kind}'"))?;
        if let Some(v) = version {
            if !is_slug(v) {
                return Err(format!(
                    "engine version '{v}' has characters outside [a-z0-9._-]"
                ));
            }
        }
        Ok(Engine {
            kind,
            version: version.map(str::to_string),
        })
    }
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
            Int4 { group: 32 },
            Int4 { group: 128 },
            MxInt8,
            Gguf(Q8_0),
            Gguf(Q4_0),
            Gguf(Q4_1),
            Gguf(Q5_0),
            Gguf(Q5_1),
            Gguf(Q4K),
            Gguf(Q6K),
        ]
    }
}

impl fmt::Display for NumericFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumericFormat::F32 => f.write_str("f32"),
            NumericFormat::Tf32 => f.write_str("tf32"),
            NumericFormat::Bf16 => f.write_str("bf16"),
            NumericFormat::F16 => f.write_str("f16"),
            NumericFormat::Fp8E4m3 => f.write_str("fp8-e4m3"),
            NumericFormat::Fp8E5m2 => f.write_str("fp8-e5m2"),
            NumericFormat::Int8 => f.write_str("int8"),
            NumericFormat::Int4 { group } => write!(f, "int4-g{group}"),
            NumericFormat::MxInt8 => f.write_str("mxint8"),
            NumericFormat::Gguf(t) => f.write_str(match t {
                GgufType::Q8_0 => "q8_0",
                GgufType::Q4_0 => "q4_0",
                GgufType::Q4_1 => "q4_1",
                GgufType::Q5_0 => "q5_0",
                GgufType::Q5_1 => "q5_1",
                GgufType::Q4K => "q4_k",
                GgufType::Q6K => "q6_k",
            }),
        }
    }
}

impl FromStr for NumericFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(g) = s.strip_prefix("int4-g") {
            return match g.parse::<u32>() {
                Ok(group) if group > 0 => Ok(NumericFormat::Int4 { group }),
                _ => Err(format!("int4 group '{g}' must be a positive integer")),
            };
        }
        NumericFormat::all()
            .into_iter()
            .find(|f| f.to_string() == s)
            .ok_or_else(|| format!("unknown numeric format '{s}'"))
    }
}

impl fmt::Display for Accumulator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Accumulator::F32 => "f32",
            Accumulator::F16 => "f16",
            Accumulator::Bf16 => "bf16",
        })
    }
}

impl fmt::Display for ReductionOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReductionOrder::Sequential => f.write_str("seq"),
            ReductionOrder::Pairwise => f.write_str("pair"),
            ReductionOrder::Blocked { tile } => write!(f, "blk{tile}"),
            ReductionOrder::Library => f.write_str("lib"),
        }
    }
}

impl fmt::Display for KernelOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.order == ReductionOrder::Library {
            return write!(f, "acc-{}", self.accumulator);
        }
        write!(
            f,
            "acc-{}.{}.sk{}.{}",
            self.accumulator,
            self.order,
            self.split_k,
            if self.fma { "fma" } else { "nofma" }
        )
    }
}

impl FromStr for KernelOptions {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad =
            |what: &str| format!("kernel options '{s}': {what} (expected acc-f32.blk32.sk2.fma)");
        let accumulator = |acc: &str| match acc.strip_prefix("acc-") {
            Some("f32") => Ok(Accumulator::F32),
            Some("f16") => Ok(Accumulator::F16),
            Some("bf16") => Ok(Accumulator::Bf16),
            _ => Err(bad("accumulator must be acc-f32, acc-f16 or acc-bf16")),
        };
        let parts: Vec<&str> = s.split('.').collect();
        let [acc, order, sk, fma] = parts.as_slice() else {
            // The short form: the accumulator alone, the rest chosen by the library.
            if let [acc] = parts.as_slice() {
                return Ok(KernelOptions {
                    accumulator: accumulator(acc)?,
                    order: ReductionOrder::Library,
                    split_k: 1,
                    fma: true,
                });
            }
            return Err(bad("expected acc-X alone or four parts separated by '.'"));
        };
        let accumulator = accumulator(acc)?;
        let order = match *order {
            "seq" => ReductionOrder::Sequential,
            "pair" => ReductionOrder::Pairwise,
            other => match other
                .strip_prefix("blk")
                .and_then(|t| t.parse::<u32>().ok())
            {
                Some(tile) if tile > 0 => ReductionOrder::Blocked { tile },
                _ => return Err(bad("reduction order must be seq, pair or blkK")),
            },
        };
        let split_k = sk
            .strip_prefix("sk")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| bad("split-K must be skN with N ≥ 1"))?;
        let fma = match *fma {
            "fma" => true,
            "nofma" => false,
            _ => return Err(bad("last part must be fma or nofma")),
        };
        Ok(KernelOptions {
            accumulator,
            order,
            split_k,
            fma,
        })
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
