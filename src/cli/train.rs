//! `hspi train`: fit a platform classifier on labelled datasets and save it.

use std::process::ExitCode;

use hspi_cli::train::Args;

use crate::printer;

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
