//! Report models and exporters. One exporter per file.

pub mod eqc_table;
pub mod eval_table;
pub mod identification;
