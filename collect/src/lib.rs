//! Models, backends, targets and the collector.

pub mod atlas;
pub mod backend;
pub mod collector;
pub mod error;
mod forced_endpoint;
mod forced_gpu;
mod forced_server;
pub mod grid;
pub mod http;
pub mod listing;
pub mod llama;
mod reference_engine;
pub mod residency;
pub mod rounding;
pub mod scheme;
pub mod serve;
pub mod session;
pub mod started_engine;
pub mod target;
pub mod teacher_forced;
mod token_steps;
mod top_list;
pub mod zoo;

pub use collector::{collect, CollectSummary, NoProgress, PendingTarget, Progress};
pub use error::{CollectError, Result};
pub use target::{check_local, local_target_id, open_local, Answer, Target};
pub use zoo::{Model, ModelId};

/// The candle release linked into this build (recorded in platforms and provenance).
pub const CANDLE_VERSION: &str = "0.11.1";

/// Engines linked into this build, for dataset provenance.
pub fn engine_versions() -> Vec<(String, String)> {
    vec![("candle".into(), CANDLE_VERSION.into())]
}
