//! `hspi watch`: audit several providers round after round against a pack, flag changes, and keep
//! the comparison report; `--replay DIR` recomputes the findings from what a watch stored.

use std::path::PathBuf;
use std::process::ExitCode;

use hspi_audit::{parse_every, TotalBudget, WatchOptions, WatchPlan, WatchProvider};
use hspi_classify::change_point::ChangeParams;
use hspi_classify::verify::VerifyParams;

use super::collect::command_line;
use super::collect_http::EndpointArgs;
use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A provider, NAME=URL[,claim=SPEC][,api-key-env=VAR]; repeat for each.
    #[arg(long = "provider")]
    pub providers: Vec<String>,
    /// The claim of providers that name none, e.g. */*/f16/*.
    #[arg(long)]
    pub claim: Option<String>,
    /// The audit pack (default: the installed pack for --model).
    #[arg(long)]
    pub pack: Option<PathBuf>,
    /// The model name to ask for (default: the pack's).
    #[arg(long, default_value = "")]
    pub model: String,
    /// The watch directory: log, every round's answers and reports, comparison.json. A rerun
    /// resumes it.
    #[arg(long, required_unless_present = "replay")]
    pub out: Option<PathBuf>,
    /// Rounds to run (a resumed watch may be given more).
    #[arg(long, default_value_t = 48)]
    pub rounds: u32,
    /// Pause between rounds (90s, 30m, 2h), jittered by ±--jitter.
    #[arg(long, default_value = "30m")]
    pub every: String,
    #[arg(long, default_value_t = 0.2)]
    pub jitter: f64,
    /// Seed of the draws and orders (default: fresh; kept in DIR/watch.json).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Prompts drawn from the pack's pool per provider per round.
    #[arg(long, default_value_t = hspi_audit::DEFAULT_DRAW)]
    pub draw: usize,
    /// Net decided rounds naming another value before a change is flagged (≥ 2).
    #[arg(long, default_value_t = 2)]
    pub rounds_to_flag: u32,
    /// Run this shell command with each change flagged, as JSON on its stdin.
    #[arg(long)]
    pub on_change: Option<String>,
    /// Stop the watch before all its audits together send more requests than this.
    #[arg(long)]
    pub total_max_requests: Option<u64>,
    /// Stop the watch before all its audits together could cost more than this.
    #[arg(long)]
    pub total_max_cost: Option<f64>,
    /// Recompute the findings of the watch in DIR from its stored rounds (with --pack or
    /// --model: deciding every round's answers again).
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// Print the comparison report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Each audit's endpoint settings; --max-requests / --max-cost cap each provider's round.
    #[command(flatten)]
    pub endpoint: EndpointArgs,
}

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
