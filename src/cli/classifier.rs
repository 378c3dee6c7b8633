//! The feature and training flags shared by `hspi train` and `hspi eval`.

use std::path::PathBuf;

use anyhow::Context;
use hspi_classify::features::{parse_kinds, FeatureKind};
use hspi_classify::linear::TrainParams;

#[derive(Debug, Clone, clap::Args)]
pub struct FeatureArgs {
    /// Feature extractors, comma-separated (bits, sem, xor-reference, mantissa-histogram,
    /// reference-relative, logprob-stats, text-only). Default: reference-relative with
    /// mantissa-histogram (logits) or logprob-stats (API answers).
    #[arg(long)]
    pub features: Option<String>,
    /// Datasets of hspi's own answers to the same probes on reference platforms (local
    /// recomputation). Default: the training datasets.
    #[arg(long, num_args = 1..)]
    pub references: Vec<PathBuf>,
    /// Use only these reference platforms (comma-separated), e.g. the ones hspi can run here.
    #[arg(long)]
    pub reference_platforms: Option<String>,
    /// Validation folds (grouped by probe).
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// L2 strengths to choose from by validation, comma-separated.
    #[arg(long, default_value = "0.01,0.1,1,10")]
    pub alphas: String,
    /// Repeat collections of training probes: a class that repeats bit for bit can be ruled out.
    #[arg(long, num_args = 1..)]
    pub repeats: Vec<PathBuf>,
}

impl FeatureArgs {
    /// The extractors `--features` names (None: the evidence mode's defaults).
    pub fn features(&self) -> anyhow::Result<Option<Vec<FeatureKind>>> {
        self.features
            .as_deref()
            .map(parse_kinds)
            .transpose()
            .context("--features")
    }

    pub fn params(&self) -> anyhow::Result<TrainParams> {
        Ok(TrainParams::from_flags(self.folds, &self.alphas)?)
    }

    pub fn reference_platforms(&self) -> anyhow::Result<Option<Vec<String>>> {
        let Some(list) = &self.reference_platforms else {
            return Ok(None);
        };
        let platforms =
            hspi_datasets::Platform::parse_list(list).context("--reference-platforms")?;
        Ok(Some(platforms.iter().map(ToString::to_string).collect()))
    }
}
