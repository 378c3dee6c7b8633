use std::process::ExitCode;

use hspi_cli::fetch::Args;

use crate::printer;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let path = hspi_collect::zoo::fetch(&args.what)?;
    printer::data(&path.display().to_string());
    Ok(ExitCode::SUCCESS)
}
