use std::path::PathBuf;

#[derive(Debug, Default, clap::Args)]
pub struct Args {
    /// Local: cnn-digits or tiny-lm (embedded), smollm2 (after `hspi fetch smollm2`), or any
    /// language model named with its --weights (a GGUF file or a checkpoint directory).
    /// With --endpoint: the model name to ask the endpoint for.
    #[arg(long, default_value = "cnn-digits")]
    pub model: String,
    /// Comma-separated platform strings and groups: `default` (the CPU grid) or a backend's name
    /// (`candle`, `emulated`, `cuda`: all it runs the model at here; `hspi platforms` lists them).
    #[arg(long, default_value = "default")]
    pub platforms: String,
    /// A number of seeded random probes, or a probe-set file from `hspi probe`.
    #[arg(long, default_value = "200")]
    pub probes: String,
    /// Seed for generated probes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Weights file instead of the embedded or cached one.
    #[arg(long)]
    pub weights: Option<PathBuf>,
    /// Output dataset directory.
    #[arg(
        long,
        required_unless_present = "plan",
        default_value = ".",
        hide_default_value = true
    )]
    pub out: PathBuf,
    /// Collect one shard of an atlas plan (`hspi atlas plan`) into the plan's shard directory,
    /// resuming what is there; --model, --platforms, --probes and --out come from the plan.
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// The shard to collect (default: $SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX).
    #[arg(long, requires = "plan")]
    pub shard: Option<usize>,
    /// Continue an interrupted collection in --out.
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Replace --out if it exists.
    #[arg(long)]
    pub force: bool,
    /// Print a JSON summary on stdout.
    #[arg(long)]
    pub json: bool,
    /// A kernel-plans file (`hspi emulate fit`): the GPU platforms it covers are computed on
    /// this CPU from their plans and labelled as those GPU platforms (`--platforms plans`: all).
    #[arg(long)]
    pub emulate: Option<PathBuf>,
    #[command(flatten)]
    pub endpoint: crate::collect_http::EndpointArgs,
}
