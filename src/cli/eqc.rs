use std::path::PathBuf;
use std::process::ExitCode;

use hspi_datasets::Dataset;

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset directory.
    pub dataset: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let grouping = hspi_classify::group_eqcs(&Dataset::open(&args.dataset)?.records()?)?;
    printer::data(&if args.json {
        hspi_reports::eqc_table::render_json(&grouping)
    } else {
        hspi_reports::eqc_table::render_text(&grouping)
    });
    Ok(ExitCode::SUCCESS)
}
