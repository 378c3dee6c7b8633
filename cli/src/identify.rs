//! `hspi identify`: name the platform (EQC) behind each target's answers in a dataset.

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Datasets of answers to identify (an endpoint's collection, or labelled ones to check).
    #[arg(required = true)]
    pub datasets: Vec<PathBuf>,
    /// A model written by `hspi train`.
    #[arg(long, short)]
    pub model: PathBuf,
    /// hspi's own answers to the same probes on the model's reference platforms.
    #[arg(long, num_args = 1..)]
    pub references: Vec<PathBuf>,
    /// Use at most this many answers per target.
    #[arg(long)]
    pub queries: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the report model (JSON, for `hspi report`) to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
}
