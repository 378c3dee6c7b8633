//! `hspi train`: fit a platform classifier on labelled datasets and save it.

use std::path::PathBuf;
use std::process::ExitCode;

use hspi_classify::{PlatformModel, ReferenceIndex, TrainInput};

use super::classifier::{load, load_references, FeatureArgs};
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
    let params = args.features.params()?;
    let reference_platforms = args.features.reference_platforms()?;
    let data = load(&args.datasets)?;
    let kinds = args.features.kinds(&data.records)?;
    let extra = load_references(&args.features.references)?;
    let references = ReferenceIndex::new(data.records.iter().chain(&extra));
    let started = std::time::Instant::now();
    let model = PlatformModel::train(TrainInput {
        records: &data.records,
        model: data.model,
        probe_set_hash: data.probe_set_hash,
        references: &references,
        reference_platforms,
        kinds,
        params,
    })?;
    model.save(&args.out)?;
    let best = model
        .validation
        .scores
        .iter()
        .find(|s| s.0 == model.validation.alpha)
        .map_or(String::new(), |s| {
            format!(", validation accuracy {:.1} %", s.1 * 100.0)
        });
    printer::status(&format!(
        "trained {} on {} answers in {:.1} s: {} classes, features {}, alpha {}{best}; open-set threshold {:.2} (held-out: {:.1} % known rejected, {:.1} % unknown accepted)",
        model.id,
        model.samples,
        started.elapsed().as_secs_f64(),
        model.classes.len(),
        model.spec.describe(),
        model.validation.alpha,
        model.open_set.threshold,
        model.open_set.known_rejected * 100.0,
        model.open_set.unknown_accepted * 100.0,
    ));
    printer::data(&args.out.display().to_string());
    Ok(ExitCode::SUCCESS)
}
