//! `hspi report`: render a report model (written by audit, or verify/identify/eval --report) as
//! HTML, PDF, Markdown or JSON.

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A report JSON (schema hspi-report/1), e.g. DIR/audit.json from `hspi audit`.
    #[arg(long)]
    pub from: PathBuf,
    /// html, pdf, md or json.
    #[arg(long)]
    pub format: String,
    /// Output file.
    #[arg(long)]
    pub out: PathBuf,
}
