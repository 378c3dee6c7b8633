use std::process::ExitCode;

use hspi_cli::eqc::Args;

use crate::printer;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (records, _, _) = hspi_datasets::store::load_same_probes(&args.datasets)?;
    let grouping = hspi_classify::group_eqcs(&records)?;
    printer::json_or(args.json, &grouping, hspi_reports::eqc_table::render_text)?;
    Ok(ExitCode::SUCCESS)
}
