//! `hspi report`: render a report model (written by audit, or verify/identify/eval --report) as
//! HTML, PDF, Markdown or JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

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
    let text = std::fs::read_to_string(&args.from)
        .with_context(|| format!("reading {}", args.from.display()))?;
    let exporter = hspi_reports::exporter(&args.format)?;
    let report = hspi_reports::json::parse(&text, &args.from.display().to_string())?;
    let bytes = exporter.render(&report);
    std::fs::write(&args.out, bytes).with_context(|| format!("writing {}", args.out.display()))?;
    printer::status(&format!("wrote {}", args.out.display()));
    Ok(ExitCode::SUCCESS)
}
