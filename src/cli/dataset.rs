use std::path::PathBuf;
use std::process::ExitCode;

use hspi_datasets::{export::ExportFormat, Dataset};

use crate::printer;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Export records as one flat table (pandas/polars read it with no hspi code).
    Export {
        /// Dataset directory.
        dataset: PathBuf,
        /// csv or parquet.
        #[arg(long)]
        format: ExportFormat,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Check the manifest, checksums and every record.
    Verify {
        /// Dataset directory.
        dataset: PathBuf,
    },
    /// Compare two datasets record for record: the same platform (or the only one on each side)
    /// answering the same probes with the same bits? Exit 0 when all are identical, 1 otherwise.
    Diff {
        left: PathBuf,
        right: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Merge shard datasets (e.g. an atlas plan's shards) into one, checking probe set, model
    /// and schema, refusing duplicate records, keeping every shard's provenance.
    Merge {
        /// Shard dataset directories.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// The merged dataset directory (must not exist).
        #[arg(long)]
        out: PathBuf,
    },
}

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
        Command::Merge { shards, out } => {
            let command = super::collect::command_line();
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
