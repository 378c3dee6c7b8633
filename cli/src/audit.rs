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
    /// The model's weights (GGUF file or checkpoint directory, the pack's model): ask prompts made
    /// for this audit alone (--draw of them) and compute their references here, on the
    /// provider's own tokens, in every format of the pack. Tests the format and the model.
    #[arg(long, value_name = "PATH", help_heading = "Pack and prompts")]
    pub weights: Option<PathBuf>,
    /// With --weights: only these formats (comma-separated; default every format of the pack;
    /// `none`: no format computed here, the reference engines named below only). Fewer is
    /// quicker; answers in a format left out can only be called unknown.
    #[arg(
        long,
        value_delimiter = ',',
        requires = "weights",
        help_heading = "Pack and prompts"
    )]
    pub fresh_formats: Vec<FreshFormat>,
    #[command(flatten, next_help_heading = "Pack and prompts")]
    pub engines: crate::reference_engines::ReferenceEngineArgs,
    /// With --weights: hold every format's engine between answers (`resident`: quickest, memory
    /// the sum of the formats), or make each per answer from files kept on disk (`per-answer`:
    /// memory about twice the largest format, each answer pays the reloads); `auto` holds them
    /// where they fit half the memory available.
    #[arg(
        long,
        value_name = "auto|resident|per-answer",
        default_value = "auto",
        requires = "weights",
        help_heading = "Pack and prompts"
    )]
    pub fresh_memory: hspi_collect::residency::Residency,
    /// With --weights: prompts that make attention read far back, each asking the model to
    /// recall the first of WORDS words (a quantised KV cache shows most over a long context);
    /// 0: short word prompts.
    #[arg(
        long,
        value_name = "WORDS",
        default_value_t = 0,
        requires = "weights",
        help_heading = "Pack and prompts"
    )]
    pub fresh_context: usize,
    /// The provider claims its answers repeat bit for bit (batch-invariant or deterministic
    /// serving, whatever else the server computes at the time): ask every second answered prompt
    /// again and report the jitter on a `determinism` line beside the verdict.
    #[arg(long, help_heading = "Pack and prompts")]
    pub deterministic: bool,
}

/// A format a fresh audit computes here, or `none`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FreshFormat {
    None,
    Format(hspi_datasets::NumericFormat),
}

impl std::str::FromStr for FreshFormat {
    type Err = <hspi_datasets::NumericFormat as std::str::FromStr>::Err;

    fn from_str(s: &str) -> Result<FreshFormat, Self::Err> {
        match s {
            "none" => Ok(FreshFormat::None),
            _ => s.parse().map(FreshFormat::Format),
        }
    }
}
