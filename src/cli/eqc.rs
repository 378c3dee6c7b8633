use std::path::PathBuf;
use std::process::ExitCode;

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset directories (several: e.g. one per endpoint), all over the same probe set.
    #[arg(required = true)]
    pub datasets: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (records, _, _) = hspi_datasets::store::load_same_probes(&args.datasets)?;
    let grouping = hspi_classify::group_eqcs(&records)?;
    printer::json_or(args.json, &grouping, hspi_reports::eqc_table::render_text)?;
    Ok(ExitCode::SUCCESS)
}
