//! `hspi identify`: name the platform (EQC) behind each target's answers in a dataset.

use std::process::ExitCode;

use hspi_audit::identify_datasets;
use hspi_cli::identify::Args;

use crate::printer;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (ids, report) =
        identify_datasets(&args.model, &args.datasets, &args.references, args.queries)?;
    if let Some(path) = &args.report {
        hspi_reports::json::write(path, &report)?;
    }
    printer::json_or(args.json, &ids, |i| {
        hspi_reports::identification::render_text(i)
    })?;
    let unknown = ids.iter().any(|i| i.is_unknown());
    Ok(ExitCode::from(if unknown { 4 } else { 0 }))
}
