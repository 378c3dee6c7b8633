//! The hardware dimension: `cpu-ISA`, `cuda-GPU-smXY-NNsm` or `remote-NAME`.

use std::fmt;
use std::str::FromStr;

use super::dimension::Dimension;
use super::error::{is_slug, FieldError};

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
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, FieldError> {
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
            return Err(FieldError::new(
                Dimension::Hardware,
                format!("cpu instruction set '{isa}' must be lowercase letters and digits"),
            ));
        }
        if let Some(rest) = s.strip_prefix("cuda-") {
            let bad = || {
                FieldError::new(
                    Dimension::Hardware,
                    format!("cuda hardware '{s}' is not of the form cuda-GPU-smXY-NNsm"),
                )
            };
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
            return Err(FieldError::new(
                Dimension::Hardware,
                format!("remote name '{name}' must be lowercase letters, digits, '.', '_' or '-'"),
            ));
        }
        Err(FieldError::new(
            Dimension::Hardware,
            format!("unknown hardware '{s}' (expected cpu-ISA, cuda-… or remote-NAME)"),
        ))
    }
}
