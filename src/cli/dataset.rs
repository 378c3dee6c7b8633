use std::process::ExitCode;

use hspi_cli::dataset::Command;
use hspi_datasets::Dataset;

use crate::printer;

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Export {
            dataset,
            format,
            out,
        } => {
            let rows = hspi_datasets::export::export(&Dataset::open(&dataset)?, format, &out)?;
            printer::status(&format!("wrote {rows} rows to {}", out.display()));
        }
        Command::References {
            answers,
            weights,
            formats,
            out,
            force,
            memory,
        } => {
            let command = hspi_cli::command_line();
            let written = hspi_audit::forced_references(hspi_audit::ForcedReferences {
                answers: &answers,
                weights: &weights,
                formats,
                out: &out,
                mode: hspi_datasets::OpenMode::from_flags(false, force),
                residency: memory,
                command: &command,
            })?;
            printer::status(&format!(
                "wrote {written} reference records to {}",
                out.display()
            ));
        }
        Command::Merge { shards, out } => {
            let command = hspi_cli::command_line();
            let session = hspi_collect::session::new_session(&command);
            let m = hspi_datasets::store::merge(&shards, &out, session)?;
            printer::status(&m.describe(&out));
        }
        Command::Diff { left, right, json } => {
            let d = hspi_datasets::diff::diff(&Dataset::open(&left)?, &Dataset::open(&right)?)?;
            printer::json_or(json, &d, hspi_reports::diff_table::render_text)?;
            if !d.all_identical() {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Verify { dataset } => printer::data(&Dataset::open(&dataset)?.verify_all()?),
    }
    Ok(ExitCode::SUCCESS)
}
