//! `hspi watch`: audit several providers round after round against a pack, flag changes, and keep
//! the comparison report; `--replay DIR` recomputes the findings from what a watch stored.

use std::process::ExitCode;

use hspi_audit::{parse_every, TotalBudget, WatchOptions, WatchPlan, WatchProvider};
use hspi_classify::change_point::ChangeParams;
use hspi_classify::verify::VerifyParams;
use hspi_cli::command_line;
use hspi_cli::watch::Args;

use crate::printer;

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let change = ChangeParams::new(a.rounds_to_flag)?;
    let params = VerifyParams::default();
    let (report, dir, code) = if let Some(dir) = &a.replay {
        let report = hspi_audit::replay(dir, a.pack.as_deref(), &a.model, &params, change)?;
        let code = report.exit_code();
        (report, dir.clone(), code)
    } else {
        anyhow::ensure!(
            a.endpoint.endpoint.is_none(),
            "hspi watch takes its endpoints from --provider NAME=URL, not --endpoint"
        );
        let dir = a.out.clone().expect("clap requires --out without --replay");
        let providers = (a.providers.iter())
            .map(|p| WatchProvider::parse(p, a.claim.as_deref()))
            .collect::<Result<Vec<_>, _>>()?;
        let seed = a.seed.unwrap_or_else(hspi_pack::fresh_seed);
        let every = parse_every(&a.every)?;
        let options = WatchOptions {
            plan: WatchPlan::new(providers, a.rounds, every, a.jitter, seed)?,
            dir: &dir,
            pack: a.pack.as_deref(),
            draw: a.draw,
            params,
            endpoint: a.endpoint.options(&a.model)?,
            total: TotalBudget {
                max_requests: a.total_max_requests,
                max_cost: a.total_max_cost,
            },
            change,
            on_change: a.on_change.clone(),
            command: command_line(),
        };
        let done = hspi_audit::watch(options, &printer::lines())?;
        if let Some(why) = &done.stopped {
            printer::status(&format!("stopped: {why}"));
        }
        let code = done.exit_code();
        (done.report, dir, code)
    };
    printer::json_or(a.json, &report, hspi_reports::markdown::render)?;
    printer::status(&format!(
        "comparison written to {d}/{}\nhint: hspi report --from {d} --format html --out comparison.html (or pdf)",
        hspi_audit::COMPARISON_FILE,
        d = dir.display()
    ));
    Ok(ExitCode::from(code))
}
