//! `hspi report`: render a report model (written by audit, or verify/identify/eval --report) as
//! HTML, PDF, Markdown or JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::printer;

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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    hspi_reports::render_file(&args.from, &args.format, &args.out)?;
    printer::status(&format!("wrote {}", args.out.display()));
    Ok(ExitCode::SUCCESS)
}
