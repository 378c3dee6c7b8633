//! Fit a platform classifier on labelled datasets and save it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use hspi_classify::features::FeatureKind;
use hspi_classify::linear::TrainParams;
use hspi_classify::{PlatformModel, ReferenceIndex, TrainInput};
use hspi_datasets::store::load_one_model;

use crate::error::AuditError;
use crate::setup::load_references;

/// How a classifier is trained, shared by `hspi train` and `hspi eval`.
#[derive(Debug, Clone, Default)]
pub struct TrainSpec {
    /// None: the evidence mode's default features.
    pub features: Option<Vec<FeatureKind>>,
    /// hspi's own answers to the same probes (default: the training datasets).
    pub references: Vec<PathBuf>,
    pub reference_platforms: Option<Vec<String>>,
    pub params: TrainParams,
    /// Datasets collected again over some of the training probes on the same platforms.
    pub repeats: Vec<PathBuf>,
}

pub struct TrainOptions<'a> {
    pub datasets: &'a [PathBuf],
    pub out: &'a Path,
    pub spec: TrainSpec,
}

/// The saved model and how training went, in one line.
pub struct Trained {
    pub model: PlatformModel,
    pub summary: String,
}

pub fn train(o: TrainOptions) -> Result<Trained, AuditError> {
    let data = load_one_model(o.datasets)?;
    fit(data, o)
}

/// Train on the answers of every platform to the probes all of them answered (an audit pack
/// whose platforms cover different parts of its pool); every answer stays a reference.
pub fn train_on_shared_probes(o: TrainOptions) -> Result<Trained, AuditError> {
    let mut data = load_one_model(o.datasets)?;
    let mut answered: std::collections::HashMap<&str, std::collections::HashSet<String>> =
        std::collections::HashMap::new();
    for r in &data.records {
        answered
            .entry(r.probe_id.as_str())
            .or_default()
            .insert(r.platform_key());
    }
    let platforms = answered.values().map(|s| s.len()).max().unwrap_or(0);
    let shared: std::collections::HashSet<String> = answered
        .iter()
        .filter(|(_, p)| p.len() == platforms)
        .map(|(id, _)| id.to_string())
        .collect();
    data.records.retain(|r| shared.contains(&r.probe_id));
    fit(data, o)
}

fn fit(data: hspi_datasets::store::OneModel, o: TrainOptions) -> Result<Trained, AuditError> {
    let spec = o.spec;
    let kinds = match spec.features {
        Some(k) => k,
        None => hspi_classify::evidence::detect(&data.records)?.default_features(),
    };
    let extra = load_references(&spec.references)?;
    let references = ReferenceIndex::new(data.records.iter().chain(&extra));
    let started = Instant::now();
    let model = PlatformModel::train(TrainInput {
        records: &data.records,
        model: data.model,
        probe_set_hash: data.probe_set_hash,
        references: &references,
        reference_platforms: spec.reference_platforms,
        kinds,
        params: spec.params,
        repeats: &load_references(&spec.repeats)?,
    })?;
    model.save(o.out)?;
    let best = model
        .validation
        .scores
        .iter()
        .find(|s| s.0 == model.validation.alpha)
        .map_or(String::new(), |s| {
            format!(", validation accuracy {:.1} %", s.1 * 100.0)
        });
    let summary = format!(
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
    ) + &repeat_summary(&model);
    Ok(Trained { model, summary })
}

/// `; repeated answers: 3 classes bit for bit, 1 varies` when repeats were given.
fn repeat_summary(model: &PlatformModel) -> String {
    let measured: Vec<_> = model.classes.iter().filter_map(|c| c.repeats).collect();
    if measured.is_empty() {
        return String::new();
    }
    let same = measured.iter().filter(|r| r.deterministic()).count();
    format!(
        "; repeated answers: {same} of {} measured classes bit for bit, {} vary",
        measured.len(),
        measured.len() - same
    )
}
