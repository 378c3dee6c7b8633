use std::process::ExitCode;

use hspi_cli::demo::Args;

use crate::printer;

/// The embedded defaults end to end, with no network and no download.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = hspi_audit::DemoOptions {
        out: args.out,
        probes: args.probes,
        command: hspi_cli::command_line(),
    };
    hspi_audit::demo(&options, &printer::lines())?;
    Ok(ExitCode::SUCCESS)
}
