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
    printer::data(&if args.json {
        serde_json::to_string_pretty(&listing.json())?
    } else {
        listing.text()
    });
    Ok(ExitCode::SUCCESS)
}
