//! The hspi vocabulary — platforms, probes, records, EQCs, provenance — and the dataset store.
//! Depends on no other workspace crate.

pub mod diff;
pub mod eqc;
pub mod error;
pub mod export;
pub mod manifest;
pub mod platform;
pub mod probe;
pub mod provenance;
pub mod record;
pub mod store;

pub use eqc::Eqc;
pub use error::{DatasetError, PlatformParseError};
pub use manifest::{Manifest, ModelInfo, ProbeSetInfo, Session, SCHEMA_VERSION};
pub use platform::{
    Accumulator, Engine, EngineKind, GgufType, Hardware, KernelOptions, NumericFormat, Platform,
    ReductionOrder,
};
pub use probe::{content_id, GenerationParams, Probe, ProbeInput, ProbeProvenance, ProbeSet};
pub use provenance::{GpuInfo, HostProvenance};
pub use record::{
    top_label, LogitBits, Logprob, Outputs, Record, Served, TokenStep, TopEntry, Usage,
};
pub use store::{Dataset, DatasetWriter, OpenMode};
