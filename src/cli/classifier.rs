//! Shared by `hspi train`, `identify` and `eval`: loading datasets of any probe set, the
//! feature and reference flags, and the model the records come from.

use std::path::PathBuf;

use anyhow::Context;
use hspi_classify::features::{parse_kinds, FeatureKind};
use hspi_classify::linear::TrainParams;
use hspi_datasets::store::{load_one_model, OneModel};
use hspi_datasets::Record;

/// Records of several datasets of one model (any probe sets).
pub fn load(dirs: &[PathBuf]) -> anyhow::Result<OneModel> {
    Ok(load_one_model(dirs)?)
}

/// Records of reference datasets: any model check is the caller's.
pub fn load_references(dirs: &[PathBuf]) -> anyhow::Result<Vec<Record>> {
    Ok(if dirs.is_empty() {
        Vec::new()
    } else {
        load(dirs)?.records
    })
}

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
}

impl FeatureArgs {
    pub fn kinds(&self, records: &[Record]) -> anyhow::Result<Vec<FeatureKind>> {
        match &self.features {
            Some(f) => parse_kinds(f).context("--features"),
            None => default_kinds(records),
        }
    }

    pub fn params(&self) -> anyhow::Result<TrainParams> {
        let alphas = self
            .alphas
            .split(',')
            .map(|a| {
                a.trim()
                    .parse::<f64>()
                    .with_context(|| format!("--alphas: '{a}' is not a number"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let p = TrainParams {
            folds: self.folds,
            alphas,
            ..TrainParams::default()
        };
        p.validate()?;
        Ok(p)
    }

    pub fn reference_platforms(&self) -> anyhow::Result<Option<Vec<String>>> {
        let Some(list) = &self.reference_platforms else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for p in list.split(',').map(str::trim) {
            let parsed: hspi_datasets::Platform = p
                .parse()
                .map_err(|e| anyhow::anyhow!("--reference-platforms: {e}"))?;
            out.push(parsed.to_string());
        }
        Ok(Some(out))
    }
}

pub fn default_kinds(records: &[Record]) -> anyhow::Result<Vec<FeatureKind>> {
    Ok(hspi_classify::evidence::detect(records)?.default_features())
}

/// HSPI's own features: raw logit bits (white-box) or sign/exponent/mantissa of the top-k
/// logprobs (black-box).
pub fn baseline_kinds(records: &[Record]) -> anyhow::Result<Vec<FeatureKind>> {
    Ok(hspi_classify::evidence::detect(records)?.baseline_features())
}
