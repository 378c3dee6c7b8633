//! Report exporters behind one trait. One exporter per file (json.rs, markdown.rs, html.rs,
//! pdf.rs); [`exporters`] is the one registration point, and the binary only picks by name. To add
//! one, copy markdown.rs's `Markdown` and add one line below (CONTRIBUTING.md).

use crate::error::ReportError;
use crate::report::Report;

pub trait Exporter: Sync {
    /// The name `hspi report --format` takes.
    fn name(&self) -> &'static str;
    /// Other names accepted for it.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// The file extension of its output.
    fn extension(&self) -> &'static str {
        self.name()
    }
    fn render(&self, report: &Report) -> Vec<u8>;
}

/// Every exporter, in the order `--format` lists them.
pub fn exporters() -> &'static [&'static dyn Exporter] {
    &[
        &crate::html::Html,
        &crate::pdf::Pdf,
        &crate::markdown::Markdown,
        &crate::json::Json,
    ]
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
