//! `hspi report`: render a report model (written by audit, or verify/identify/eval --report) as
//! HTML, PDF, Markdown or JSON.

use std::process::ExitCode;

use hspi_cli::report::Args;

use crate::printer;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    hspi_reports::render_file(&args.from, &args.format, &args.out)?;
    printer::status(&format!("wrote {}", args.out.display()));
    Ok(ExitCode::SUCCESS)
}
