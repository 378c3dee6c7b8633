use std::path::PathBuf;
use std::process::ExitCode;

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to keep the demo datasets (default: a fresh directory under the system temp dir).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Number of seeded random probes for the CNN grid.
    #[arg(long, default_value_t = 64)]
    probes: usize,
}

/// The embedded defaults end to end, with no network and no download.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = hspi_audit::DemoOptions {
        out: args.out,
        probes: args.probes,
        command: super::collect::command_line(),
    };
    hspi_audit::demo(&options, &printer::lines())?;
    Ok(ExitCode::SUCCESS)
}
