use std::process::ExitCode;

use hspi_cli::collect::Args;
use hspi_collect::session::{shard_index, ShardAssignment};
use hspi_datasets::OpenMode;

use crate::printer;
use crate::progress::Bar;

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    if let Some(plan) = args.plan.clone() {
        let a = ShardAssignment::read(&plan, shard_index(args.shard)?)?;
        printer::status(&a.to_string());
        args.model = a.model;
        args.platforms = a.platforms.join(",");
        args.probes = a.probes.display().to_string();
        args.out = a.out;
        args.resume = a.resume;
    }
    if args.endpoint.endpoint.is_some() {
        return super::collect_http::run(&args);
    }
    let summary = hspi_audit::collect_grid(
        hspi_audit::GridCollection {
            model: &args.model,
            weights: args.weights.as_deref(),
            platforms: &args.platforms,
            probes: &args.probes,
            seed: args.seed,
            out: &args.out,
            mode: OpenMode::from_flags(args.resume, args.force),
            command: &hspi_cli::command_line(),
            emulate: args.emulate.as_deref(),
        },
        &Bar::new(),
    )?;
    printer::status(&summary.to_string());
    if args.json {
        printer::data(&serde_json::to_string_pretty(&summary)?);
    }
    Ok(ExitCode::SUCCESS)
}
