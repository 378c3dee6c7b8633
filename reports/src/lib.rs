//! Report models and exporters. One exporter per file.

pub mod bundle;
pub mod comparison;
pub mod contract;
pub mod diff_table;
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
pub mod typeset;
pub mod verification_table;

pub use error::ReportError;
pub use exporter::Exporter;

/// Every exporter, in the order `--format` lists them.
pub fn exporters() -> &'static [&'static dyn Exporter] {
    &[
        &crate::html::Html,
        &crate::pdf::Pdf,
        &crate::markdown::Markdown,
        &crate::json::Json,
    ]
}

/// `hspi report`: read the report model at `from` and write it to `out` in `format`.
pub fn render_file(
    from: &std::path::Path,
    format: &str,
    out: &std::path::Path,
) -> Result<(), ReportError> {
    let io = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io { path, source }
    };
    // A watch directory renders its comparison report.
    let from = &if from.is_dir() {
        from.join("comparison.json")
    } else {
        from.to_path_buf()
    };
    let text = std::fs::read_to_string(from).map_err(io(from))?;
    let exporter = exporter(format)?;
    let report = json::parse(&text, &from.display().to_string())?;
    std::fs::write(out, exporter.render(&report)).map_err(io(out))
}

/// The exporter named `name` (or one of its aliases).
pub fn exporter(name: &str) -> Result<&'static dyn Exporter, ReportError> {
    exporters()
        .iter()
        .copied()
        .find(|e| e.name() == name || e.aliases().contains(&name))
        .ok_or_else(|| ReportError::UnknownFormat {
            name: name.into(),
            known: exporters()
                .iter()
                .map(|e| e.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
}
