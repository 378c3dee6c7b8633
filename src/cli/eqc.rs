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

/// Every record of several datasets over one probe set, and that probe set.
pub fn load_records(
    dirs: &[PathBuf],
) -> anyhow::Result<(Vec<hspi_datasets::Record>, hspi_datasets::ProbeSet)> {
    let (records, probes, _) = hspi_datasets::store::load_same_probes(dirs)?;
    Ok((records, probes))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (records, _) = load_records(&args.datasets)?;
    let grouping = hspi_classify::group_eqcs(&records)?;
    printer::data(&if args.json {
        hspi_reports::eqc_table::render_json(&grouping)
    } else {
        hspi_reports::eqc_table::render_text(&grouping)
    });
    Ok(ExitCode::SUCCESS)
}
