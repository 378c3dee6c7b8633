//! `hspi eval`: the HSPI paper's tables for our grid, on test probes never seen in training.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hspi_classify::evaluate::{evaluate, EvalInput};
use hspi_classify::ReferenceIndex;

use super::classifier::{baseline_kinds, load, load_references, FeatureArgs};
use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Labelled datasets to train on.
    #[arg(long, required = true, num_args = 1..)]
    pub train: Vec<PathBuf>,
    /// Labelled datasets to test on (other probes than training, for a fair score).
    #[arg(long, required = true, num_args = 1..)]
    pub test: Vec<PathBuf>,
    #[command(flatten)]
    pub features: FeatureArgs,
    /// Queries per decision for the accuracy curve, comma-separated.
    #[arg(long, default_value = "1,2,4,8,16,32")]
    pub queries: String,
    /// Hold out at most this many classes (one at a time) for the unknown-platform table.
    #[arg(long, default_value_t = 8)]
    pub held_out: usize,
    /// Datasets of another model, labelled with the same platforms: cross-model transfer.
    #[arg(long, num_args = 1..)]
    pub transfer: Vec<PathBuf>,
    /// Seed for drawing query sets.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
    /// Also write the report model (JSON, for `hspi report`) to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let params = args.features.params()?;
    let reference_platforms = args.features.reference_platforms()?;
    let queries = args
        .queries
        .split(',')
        .map(|q| {
            q.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .with_context(|| format!("--queries: '{q}' is not a positive count"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let train = load(&args.train)?;
    let test = load(&args.test)?;
    if test.model != train.model {
        anyhow::bail!(
            "training model {} and test model {} differ (use --transfer for cross-model tests)",
            train.model.id,
            test.model.id
        );
    }
    let kinds = args.features.kinds(&train.records)?;
    let extra = load_references(&args.features.references)?;
    let references = ReferenceIndex::new(train.records.iter().chain(&test.records).chain(&extra));
    let transfer = if args.transfer.is_empty() {
        None
    } else {
        Some(load(&args.transfer)?)
    };
    let transfer_refs = transfer.as_ref().map(|t| ReferenceIndex::new(&t.records));
    let report = evaluate(EvalInput {
        train: &train.records,
        test: &test.records,
        model: train.model.clone(),
        probe_set_hash: train.probe_set_hash.clone(),
        references: &references,
        reference_platforms,
        baseline_kinds: baseline_kinds(&train.records)?,
        kinds,
        params,
        queries,
        seed: args.seed,
        max_held_out: args.held_out,
        transfer: transfer
            .as_ref()
            .zip(transfer_refs.as_ref())
            .map(|(t, r)| (&t.records[..], r, t.model.id.clone())),
    })?;
    if let Some(path) = &args.report {
        let ctx = hspi_reports::report::Context::now(
            hspi_reports::report::Subject {
                endpoint: None,
                model: train.model.id.clone(),
                claim: None,
            },
            hspi_reports::report::Spent {
                queries: report.test_samples as u64,
                requests: 0,
                output_tokens: 0,
                cost: 0.0,
            },
            hspi_reports::report::Atlas::new(None, &report.classes, &args.features.references),
        );
        let r = hspi_reports::report::Report::from_eval(ctx, report.clone());
        std::fs::write(path, hspi_reports::json::render(&r))?;
    }
    printer::data(&if args.json {
        hspi_reports::eval_table::render_json(&report)
    } else {
        hspi_reports::eval_table::render_markdown(&report)
    });
    Ok(ExitCode::SUCCESS)
}
