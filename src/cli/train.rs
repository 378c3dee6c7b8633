//! `hspi train`: fit a platform classifier on labelled datasets and save it.

use std::path::PathBuf;
use std::process::ExitCode;

use super::classifier::FeatureArgs;
use crate::printer;

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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let trained = hspi_audit::train(hspi_audit::TrainOptions {
        datasets: &args.datasets,
        out: &args.out,
        spec: args.features.spec()?,
    })?;
    printer::status(&trained.summary);
    printer::data(&args.out.display().to_string());
    Ok(ExitCode::SUCCESS)
}
