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
            forced,
            out,
            force,
            memory,
            engines,
            started,
        } => {
            let command = hspi_cli::command_line();
            let written = hspi_audit::forced_references(hspi_audit::ForcedReferences {
                answers: &forced.answers,
                weights: &forced.weights,
                formats: forced.formats,
                servers: engines.engines(&forced.weights)?,
                started: started.started_engines(),
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
        Command::ReferencesSlurm {
            forced,
            out,
            slurm,
            gpus,
            engines,
            script,
        } => {
            let o = super::atlas::slurm_options(slurm)?;
            let f = &forced;
            let engines = engines.started_engines();
            let text = hspi_audit::references_slurm_script(
                &f.answers, &f.weights, &f.formats, &engines, &out, &o, gpus,
            )?;
            let logs = out.join("logs");
            std::fs::create_dir_all(&logs)
                .map_err(|e| anyhow::anyhow!("{}: {e}", logs.display()))?;
            std::fs::write(&script, text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", script.display()))?;
            printer::data(&script.display().to_string());
        }
        Command::Merge {
            shards,
            out,
            replace,
        } => {
            let command = hspi_cli::command_line();
            let session = hspi_collect::session::new_session(&command);
            let m = hspi_datasets::store::merge(&shards, &out, session, replace)?;
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
