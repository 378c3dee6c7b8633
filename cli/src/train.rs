//! `hspi train`: fit a platform classifier on labelled datasets and save it.

use std::path::PathBuf;

use crate::classifier::FeatureArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Datasets of labelled platforms (one per platform or several platforms each).
    #[arg(required = true)]
    pub datasets: Vec<PathBuf>,
    /// Where to write the model (JSON).
    #[arg(long, short)]
    pub out: PathBuf,
    #[command(flatten)]
    pub features: FeatureArgs,
}
