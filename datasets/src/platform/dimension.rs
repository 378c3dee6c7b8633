//! The dimensions of a platform: the fields a claim can be right or wrong about, and the model
//! itself. A file of its own so the fields' parsers and their errors can name a dimension
//! without importing the claim's grammar.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::Platform;

/// One field of a platform: what a claim can be right or wrong about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    Hardware,
    Engine,
    Format,
    Kernel,
    Batch,
    /// The model itself: not a field of the platform (not in [`Dimension::ALL`]), but a claim
    /// every audit makes (the endpoint is asked for a model by name). "Not this model in any
    /// format hspi knows" is a verdict of its own.
    Model,
}

impl Dimension {
    pub const ALL: [Dimension; 5] = [
        Dimension::Hardware,
        Dimension::Engine,
        Dimension::Format,
        Dimension::Kernel,
        Dimension::Batch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Dimension::Hardware => "hardware",
            Dimension::Engine => "engine",
            Dimension::Format => "format",
            Dimension::Kernel => "kernel",
            Dimension::Batch => "batch",
            Dimension::Model => "model",
        }
    }

    /// This dimension's field of a platform, as the platform string writes it.
    pub fn field(self, p: &Platform) -> Option<String> {
        match self {
            Dimension::Hardware => Some(p.hardware.to_string()),
            Dimension::Engine => Some(p.engine.to_string()),
            Dimension::Format => Some(p.format.to_string()),
            Dimension::Kernel => p.kernel.map(|k| k.to_string()),
            Dimension::Batch => Some(format!("bs{}", p.batch_size)),
            Dimension::Model => None,
        }
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no dimension's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a dimension (hardware, engine, format, kernel, batch, model)")]
pub struct UnknownDimension(pub String);

impl FromStr for Dimension {
    type Err = UnknownDimension;
    fn from_str(s: &str) -> Result<Dimension, UnknownDimension> {
        Dimension::ALL
            .into_iter()
            .chain([Dimension::Model])
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDimension(s.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for d in Dimension::ALL.into_iter().chain([Dimension::Model]) {
            assert_eq!(d.to_string().parse::<Dimension>().unwrap(), d);
        }
        let e = "colour".parse::<Dimension>().unwrap_err().to_string();
        assert!(e.contains("'colour' is not a dimension"), "{e}");
    }
}
