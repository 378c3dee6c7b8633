//! `hspi watch`: audit several providers round after round against a pack, flag changes, and keep
//! the comparison report; `--replay DIR` recomputes the findings from what a watch stored.

use std::path::PathBuf;

use crate::collect_http::EndpointArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A provider, NAME=URL[,claim=SPEC][,api-key-env=VAR]; repeat for each.
    #[arg(long = "provider", help_heading = "Providers and claim")]
    pub providers: Vec<String>,
    /// The claim of providers that name none, e.g. */*/f16/*.
    #[arg(long, help_heading = "Providers and claim")]
    pub claim: Option<String>,
    /// The audit pack (default: the installed pack for --model).
    #[arg(long, help_heading = "Pack and prompts")]
    pub pack: Option<PathBuf>,
    /// The model name to ask for (default: the pack's).
    #[arg(long, default_value = "", help_heading = "Providers and claim")]
    pub model: String,
    /// The watch directory: log, every round's answers and reports, comparison.json. A rerun
    /// resumes it.
    #[arg(long, required_unless_present = "replay", help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Rounds to run (a resumed watch may be given more).
    #[arg(long, default_value_t = 48, help_heading = "Rounds")]
    pub rounds: u32,
    /// Pause between rounds (90s, 30m, 2h), jittered by ±--jitter.
    #[arg(long, default_value = "30m", help_heading = "Rounds")]
    pub every: String,
    #[arg(long, default_value_t = 0.2, help_heading = "Rounds")]
    pub jitter: f64,
    /// Seed of the draws and orders (default: fresh; kept in DIR/watch.json).
    #[arg(long, help_heading = "Pack and prompts")]
    pub seed: Option<u64>,
    /// Prompts drawn from the pack's pool per provider per round.
    #[arg(long, default_value_t = hspi_audit::DEFAULT_DRAW, help_heading = "Pack and prompts")]
    pub draw: usize,
    /// Net decided rounds naming another value before a change is flagged (≥ 2).
    #[arg(long, default_value_t = 2, help_heading = "Rounds")]
    pub rounds_to_flag: u32,
    /// Run this shell command with each change flagged, as JSON on its stdin.
    #[arg(long, help_heading = "Output")]
    pub on_change: Option<String>,
    /// Stop the watch before all its audits together send more requests than this.
    #[arg(long, help_heading = "Budget and cost")]
    pub total_max_requests: Option<u64>,
    /// Stop the watch before all its audits together could cost more than this.
    #[arg(long, help_heading = "Budget and cost")]
    pub total_max_cost: Option<f64>,
    /// Recompute the findings of the watch in DIR from its stored rounds (with --pack or
    /// --model: deciding every round's answers again).
    #[arg(long, value_name = "DIR", help_heading = "Rounds")]
    pub replay: Option<PathBuf>,
    /// Print the comparison report as JSON.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Each audit's endpoint settings; --max-requests / --max-cost cap each provider's round.
    #[command(flatten)]
    pub endpoint: EndpointArgs,
}
