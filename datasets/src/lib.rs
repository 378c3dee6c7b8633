//! The hspi vocabulary — platforms, probes, records, EQCs, provenance — and the dataset store.
//! Depends on no other workspace crate.

mod asked_as;
pub mod diff;
pub mod eqc;
pub mod error;
pub mod export;
pub mod manifest;
pub mod platform;
pub mod presentation;
pub mod probe;
pub mod provenance;
pub mod record;
mod short_id;
pub mod store;
pub mod ulp;

pub use asked_as::AskedAs;
pub use eqc::Eqc;
pub use error::DatasetError;
pub use manifest::{
    Manifest, ModelInfo, ProbeSetInfo, Session, CAUSAL_LM, COMPLETION_ENDPOINT, IMAGE_CLASSIFIER,
    SCHEMA_VERSION,
};
pub use platform::{
    Accumulator, CachedWeights, Dimension, Engine, EngineKind, EvidenceClass, FormatFamily,
    FormatSpec, GgufType, Hardware, KernelOptions, KvCache, NumericFormat, PatternParseError,
    Platform, PlatformParseError, PlatformPattern, ReductionOrder,
};
pub use presentation::{Grid, Presentation, PresentationParseError};
pub use probe::{content_id, GenerationParams, Probe, ProbeInput, ProbeProvenance, ProbeSet};
pub use provenance::{Emulation, GpuInfo, HostProvenance};
pub use record::{
    top_label, LogitBits, Logprob, LogprobError, Outputs, Record, Served, TokenStep, TopEntry,
    Usage,
};
pub use short_id::short_id;
pub use store::{Dataset, DatasetWriter, OpenMode};
pub use ulp::ulp_diff;
