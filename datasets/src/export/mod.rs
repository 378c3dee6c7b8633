//! Export a dataset as one flat table that pandas or polars read with no hspi code.
//!
//! Columns: probe_id, target, platform, timing_us, n_outputs, argmax, then either every output
//! (`out_{i}` as float and `out_{i}_bits` as the exact u32 bit pattern) when a record has at most
//! 64 outputs, or the 16 largest (`top{j}_index`, `top{j}_value`, `top{j}_bits`) for vocabularies.

mod csv;
mod parquet;
mod table;

use std::path::Path;
use std::str::FromStr;

pub use table::{Column, ColumnData, Table};

use crate::error::{DatasetError, Result};
use crate::store::Dataset;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Parquet,
}

impl FromStr for ExportFormat {
    type Err = DatasetError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "csv" => Ok(ExportFormat::Csv),
            "parquet" => Ok(ExportFormat::Parquet),
            other => Err(DatasetError::UnknownExportFormat(other.into())),
        }
    }
}

/// Write the dataset's records to `out`; returns the number of rows written.
pub fn export(dataset: &Dataset, format: ExportFormat, out: &Path) -> Result<usize> {
    let records = dataset.records()?;
    let table = Table::from_records(&records);
    match format {
        ExportFormat::Csv => csv::write(&table, out)?,
        ExportFormat::Parquet => parquet::write(&table, out)?,
    }
    Ok(table.rows)
}
