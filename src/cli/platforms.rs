use std::process::ExitCode;

use hspi_collect::listing::Listing;

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let listing = Listing::detect();
    printer::json_or(args.json, &listing.json(), |_| listing.text())?;
    Ok(ExitCode::SUCCESS)
}
