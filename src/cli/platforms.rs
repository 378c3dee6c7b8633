use std::process::ExitCode;

use hspi_cli::platforms::Args;
use hspi_collect::listing::Listing;

use crate::printer;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let listing = Listing::detect();
    printer::json_or(args.json, &listing.json(), |_| listing.text())?;
    Ok(ExitCode::SUCCESS)
}
