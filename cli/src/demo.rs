use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to keep the demo datasets (default: a fresh directory under the system temp dir).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Number of seeded random probes for the CNN grid.
    #[arg(long, default_value_t = 64)]
    pub probes: usize,
}
