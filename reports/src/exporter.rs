//! The report exporter trait. One exporter per file (json.rs, markdown.rs, html.rs, pdf.rs);
//! `exporters()` in lib.rs is the one registration point, and the binary only picks by name.

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
