//! The engine dimension: what computed the output, with its version (`candle-0.11.1`).

use std::fmt;
use std::str::FromStr;

use super::dimension::Dimension;
use super::error::{is_slug, FieldError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineKind {
    Candle,
    Emulated,
    Cublas,
    LlamaCpp,
    Vllm,
    /// PyTorch/transformers, served by `.ci/transformers-serve` (version and attention kernel
    /// in the version slug: `transformers-5.23.0-sdpa`).
    Transformers,
    Http,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Engine {
    pub kind: EngineKind,
    pub version: Option<String>,
}

impl EngineKind {
    pub const ALL: [EngineKind; 7] = [
        EngineKind::Candle,
        EngineKind::Emulated,
        EngineKind::Cublas,
        EngineKind::LlamaCpp,
        EngineKind::Vllm,
        EngineKind::Transformers,
        EngineKind::Http,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Candle => "candle",
            EngineKind::Emulated => "emu",
            EngineKind::Cublas => "cublas",
            EngineKind::LlamaCpp => "llamacpp",
            EngineKind::Vllm => "vllm",
            EngineKind::Transformers => "transformers",
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
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, FieldError> {
        let (kind, version) = match s.split_once('-') {
            Some((k, v)) => (k, Some(v)),
            None => (s, None),
        };
        let kind = EngineKind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind)
            .ok_or_else(|| {
                FieldError::new(Dimension::Engine, format!("unknown engine '{kind}'"))
            })?;
        if let Some(v) = version {
            if !is_slug(v) {
                return Err(FieldError::new(
                    Dimension::Engine,
                    format!("engine version '{v}' has characters outside [a-z0-9._-]"),
                ));
            }
        }
        Ok(Engine {
            kind,
            version: version.map(str::to_string),
        })
    }
}
