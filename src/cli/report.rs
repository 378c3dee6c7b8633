//! `hspi report`: render a report model (written by audit, or verify/identify/eval --report) as
//! HTML, PDF, Markdown or JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};

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
    let report = hspi_reports::json::parse(&text, &args.from.display().to_string())
        .map_err(anyhow::Error::msg)?;
    let bytes = match args.format.as_str() {
        "html" => hspi_reports::html::render(&report).into_bytes(),
        "pdf" => hspi_reports::pdf::render(&report),
        "md" | "markdown" => hspi_reports::markdown::render(&report).into_bytes(),
        "json" => hspi_reports::json::render(&report).into_bytes(),
        other => bail!("--format {other}: expected html, pdf, md or json"),
    };
    std::fs::write(&args.out, bytes).with_context(|| format!("writing {}", args.out.display()))?;
    printer::status(&format!("wrote {}", args.out.display()));
    Ok(ExitCode::SUCCESS)
}
