use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset directories (several: e.g. one per endpoint), all over the same probe set.
    #[arg(required = true)]
    pub datasets: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}
