//! Report models and exporters. One exporter per file.

pub mod bundle;
pub mod eqc_table;
mod error;
pub mod eval_table;
pub mod exporter;
pub mod html;
pub mod identification;
pub mod json;
pub mod markdown;
pub mod pdf;
pub mod report;
pub mod svg;
pub mod verification_table;

pub use error::ReportError;
pub use exporter::{exporter, exporters, Exporter};
