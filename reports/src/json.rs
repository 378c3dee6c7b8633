//! JSON exporter: the report model as is (schema `hspi-report/1`, documented in REPORTS.md).

use crate::report::Report;

pub fn render(r: &Report) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

/// Read a report back, refusing other schemas.
pub fn parse(text: &str, origin: &str) -> Result<Report, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("{origin}: not JSON ({e})"))?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if schema != crate::report::SCHEMA {
        return Err(format!(
            "{origin}: schema '{schema}' is not {} (write it with `hspi audit`, or `verify`/`identify`/`eval --report FILE`)",
            crate::report::SCHEMA
        ));
    }
    serde_json::from_value(value).map_err(|e| format!("{origin}: malformed report ({e})"))
}
