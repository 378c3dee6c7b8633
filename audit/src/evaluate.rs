//! The HSPI paper's tables for a grid, on test probes never seen in training (`hspi eval`).

use std::path::PathBuf;

use hspi_classify::evaluate::{evaluate, EvalInput, EvalReport};
use hspi_classify::ReferenceIndex;
use hspi_datasets::store::load_one_model;
use hspi_datasets::Presentation;
use hspi_reports::report::{Atlas, Context, Report, Spent, Subject};

use crate::error::AuditError;
use crate::setup::load_references;
use crate::train::TrainSpec;

pub struct EvalOptions<'a> {
    pub train: &'a [PathBuf],
    pub test: &'a [PathBuf],
    pub spec: TrainSpec,
    pub queries: Vec<usize>,
    pub max_held_out: usize,
    pub hold_out: Option<hspi_datasets::PlatformPattern>,
    /// Datasets of another model labelled with the same platforms: cross-model transfer.
    pub transfer: &'a [PathBuf],
    pub seed: u64,
    /// How the test answers are shown before any path sees them (text only, rounded).
    pub shown_as: Presentation,
}

/// The evaluation, and its report model for `--report`.
pub fn evaluate_datasets(o: EvalOptions) -> Result<(EvalReport, Report), AuditError> {
    let train = load_one_model(o.train)?;
    let mut test = load_one_model(o.test)?;
    if !test.model.same_model(&train.model) {
        return Err(AuditError::ModelsDiffer {
            train: train.model.id.clone(),
            test: test.model.id.clone(),
        });
    }
    let mode = hspi_classify::evidence::detect(&train.records)?;
    let extra = load_references(&o.spec.references)?;
    // References are hspi's own exact recomputations, indexed before the test answers are shown
    // as the endpoint would show them.
    let references = ReferenceIndex::new(train.records.iter().chain(&test.records).chain(&extra));
    for r in &mut test.records {
        r.outputs = o.shown_as.show(&r.outputs);
    }
    let transfer = if o.transfer.is_empty() {
        None
    } else {
        Some(load_one_model(o.transfer)?)
    };
    let transfer_refs = transfer.as_ref().map(|t| ReferenceIndex::new(&t.records));
    let report = evaluate(EvalInput {
        train: &train.records,
        test: &test.records,
        model: train.model.clone(),
        probe_set_hash: train.probe_set_hash.clone(),
        references: &references,
        reference_platforms: o.spec.reference_platforms.clone(),
        baseline_kinds: mode.baseline_features(),
        kinds: o
            .spec
            .features
            .clone()
            .unwrap_or_else(|| mode.default_features()),
        params: o.spec.params.clone(),
        queries: o.queries,
        seed: o.seed,
        max_held_out: o.max_held_out,
        hold_out: o.hold_out,
        repeats: &load_references(&o.spec.repeats)?,
        transfer: transfer
            .as_ref()
            .zip(transfer_refs.as_ref())
            .map(|(t, r)| (&t.records[..], r, t.model.id.clone())),
    })?;
    let ctx = Context::now(
        Subject {
            architecture: None,
            endpoint: None,
            model: train.model.id.clone(),
            claim: None,
        },
        Spent {
            queries: report.test_samples as u64,
            requests: 0,
            output_tokens: 0,
            cost: 0.0,
        },
        Atlas::new(None, &report.classes, &o.spec.references),
    );
    let model = Report::from_eval(ctx, report.clone());
    Ok((report, model))
}
