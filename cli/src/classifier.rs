//! The feature and training flags shared by `hspi train` and `hspi eval`.

use std::path::PathBuf;

use hspi_audit::TrainSpec;
use hspi_classify::features::parse_kinds;
use hspi_classify::linear::TrainParams;
use hspi_datasets::Platform;

use crate::error::{bad_value, CliError};

#[derive(Debug, Clone, clap::Args)]
pub struct FeatureArgs {
    /// Feature extractors, comma-separated (bits, sem, xor-reference, mantissa-histogram,
    /// reference-relative, logprob-stats, text-only). Default: reference-relative with
    /// mantissa-histogram (logits) or logprob-stats (API answers).
    #[arg(long, help_heading = "Classifier")]
    pub features: Option<String>,
    /// Datasets of hspi's own answers to the same probes on reference platforms (local
    /// recomputation). Default: the training datasets.
    #[arg(long, num_args = 1.., help_heading = "Classifier")]
    pub references: Vec<PathBuf>,
    /// Use only these reference platforms (comma-separated), e.g. the ones hspi can run here.
    #[arg(long, help_heading = "Classifier")]
    pub reference_platforms: Option<String>,
    /// Validation folds (grouped by probe).
    #[arg(long, default_value_t = 5, help_heading = "Classifier")]
    pub folds: usize,
    /// L2 strengths to choose from by validation, comma-separated.
    #[arg(long, default_value = "0.01,0.1,1,10", help_heading = "Classifier")]
    pub alphas: String,
    /// Repeat collections of training probes: a class that repeats bit for bit can be ruled out.
    #[arg(long, num_args = 1.., help_heading = "Classifier")]
    pub repeats: Vec<PathBuf>,
}

impl FeatureArgs {
    /// The training the flags ask for (`--features` None: the evidence mode's defaults).
    pub fn spec(&self) -> Result<TrainSpec, CliError> {
        let features = self.features.as_deref().map(parse_kinds).transpose();
        let platforms = self
            .reference_platforms
            .as_deref()
            .map(Platform::canonical_list);
        Ok(TrainSpec {
            features: features.map_err(bad_value("--features"))?,
            references: self.references.clone(),
            reference_platforms: (platforms.transpose())
                .map_err(bad_value("--reference-platforms"))?,
            params: TrainParams::from_flags(self.folds, &self.alphas)?,
            repeats: self.repeats.clone(),
        })
    }
}
