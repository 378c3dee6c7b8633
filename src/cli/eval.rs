//! `hspi eval`: the HSPI paper's tables for our grid, on test probes never seen in training.

use std::process::ExitCode;

use hspi_audit::{evaluate_datasets, EvalOptions};
use hspi_cli::eval::Args;

use crate::printer;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let queries = hspi_classify::evaluate::parse_queries(&args.queries)?;
    let (report, model) = evaluate_datasets(EvalOptions {
        train: &args.train,
        test: &args.test,
        spec: args.features.spec()?,
        queries,
        max_held_out: args.held_out,
        hold_out: args.hold_out,
        transfer: &args.transfer,
        seed: args.seed,
        shown_as: args.shown_as,
    })?;
    if let Some(path) = &args.report {
        hspi_reports::json::write(path, &model)?;
    }
    printer::json_or(
        args.json,
        &report,
        hspi_reports::eval_table::render_markdown,
    )?;
    Ok(ExitCode::SUCCESS)
}
