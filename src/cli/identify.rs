//! `hspi identify`: name the platform (EQC) behind each target's answers in a dataset.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use hspi_classify::{Decision, PlatformModel, ReferenceIndex};
use hspi_datasets::Record;

use super::classifier::{load, load_references};
use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Datasets of answers to identify (an endpoint's collection, or labelled ones to check).
    #[arg(required = true)]
    pub datasets: Vec<PathBuf>,
    /// A model written by `hspi train`.
    #[arg(long, short)]
    pub model: PathBuf,
    /// hspi's own answers to the same probes on the model's reference platforms.
    #[arg(long, num_args = 1..)]
    pub references: Vec<PathBuf>,
    /// Use at most this many answers per target.
    #[arg(long)]
    pub queries: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the report model (JSON, for `hspi report`) to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let model = PlatformModel::load(&args.model)?;
    let data = load(&args.datasets)?;
    let all: Vec<&Record> = data.records.iter().collect();
    model.check_compatible(&data.model, &all)?;
    let extra = load_references(&args.references)?;
    let references = ReferenceIndex::new(&extra);
    // One identification per target (and per platform label, when a dataset holds several).
    let mut groups: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in &data.records {
        let key = r
            .platform
            .as_ref()
            .map_or_else(|| r.target.clone(), |p| format!("{} {p}", r.target));
        groups.entry(key).or_default().push(r);
    }
    let ids: Vec<_> = groups
        .values()
        .map(|records| {
            let n = args.queries.unwrap_or(records.len()).min(records.len());
            model.identify(&records[..n], &references)
        })
        .collect();
    if let Some(path) = &args.report {
        let ctx = hspi_reports::report::Context::now(
            hspi_reports::report::Subject {
                endpoint: None,
                model: data.model.id.clone(),
                claim: None,
            },
            hspi_reports::report::Spent {
                queries: ids.iter().map(|i| i.queries as u64).sum(),
                requests: ids.iter().map(|i| i.queries as u64).sum(),
                output_tokens: ids.iter().map(|i| i.output_tokens).sum(),
                cost: 0.0,
            },
            hspi_reports::report::Atlas::new(
                Some(model.id.clone()),
                &model.classes,
                &args.references,
            ),
        );
        let r = hspi_reports::report::Report::from_identify(ctx, ids.clone());
        std::fs::write(path, hspi_reports::json::render(&r))?;
    }
    printer::data(&if args.json {
        hspi_reports::identification::render_json(&ids)
    } else {
        hspi_reports::identification::render_text(&ids)
    });
    let unknown = ids
        .iter()
        .any(|i| matches!(i.decision, Decision::Unknown { .. }));
    Ok(if unknown {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
