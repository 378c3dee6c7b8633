//! `hspi audit`: verify a claim against an endpoint, identify what it serves from the same
//! answers, check the API contract, and write the report (JSON, Markdown, HTML) next to the
//! answers' dataset. With a pack (`--pack DIR`, or `--model M` for an installed one) nothing
//! else is needed: no engine runs here.

use std::path::PathBuf;

use crate::verify::{EndpointTarget, VerifyArgs};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub verify: VerifyArgs,
    #[command(flatten)]
    pub target: EndpointTarget,
    /// An audit pack (`hspi pack`); without it and --classifier, the installed pack for --model.
    #[arg(long, help_heading = "Pack and prompts")]
    pub pack: Option<PathBuf>,
    /// Prompts drawn at random from the pack's pool for this audit.
    #[arg(long, default_value_t = hspi_audit::DEFAULT_DRAW, help_heading = "Pack and prompts")]
    pub draw: usize,
    /// The draw's seed (default: fresh each audit; the report names it).
    #[arg(long, help_heading = "Pack and prompts")]
    pub draw_seed: Option<u64>,
}
