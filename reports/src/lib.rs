//! Report models and exporters. One exporter per file.

pub mod audit_report;
pub mod eqc_table;
pub mod eval_table;
pub mod identification;
