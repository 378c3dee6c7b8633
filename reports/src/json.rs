//! JSON exporter: the report model as is (schema `hspi-report/1`, documented in REPORTS.md).

use crate::error::ReportError;
use crate::exporter::Exporter;
use crate::report::Report;

pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn render(&self, r: &Report) -> Vec<u8> {
        render(r).into_bytes()
    }
}

pub fn render(r: &Report) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

/// Write the report model to `path` (`--report FILE`, for `hspi report`).
pub fn write(path: &std::path::Path, r: &Report) -> Result<(), ReportError> {
    std::fs::write(path, render(r)).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Read a report back, refusing other schemas.
pub fn parse(text: &str, origin: &str) -> Result<Report, ReportError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|source| ReportError::NotJson {
            origin: origin.into(),
            source,
        })?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if schema != crate::report::SCHEMA {
        return Err(ReportError::Schema {
            origin: origin.into(),
            found: schema.into(),
            expected: crate::report::SCHEMA,
        });
    }
    serde_json::from_value(value).map_err(|source| ReportError::Malformed {
        origin: origin.into(),
        source,
    })
}
