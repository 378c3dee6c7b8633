use std::path::PathBuf;

use hspi_datasets::ProbeSet;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Seeded random probes for a model (8-bit images, or token ids).
    Random(Generated),
    /// Numeric-stress probes: extreme images, or tiny-lm prompts nearest a top-2 logit tie.
    Stress(Generated),
    /// The fewest probes of a collected probe set that still separate every pair of EQCs.
    Minimize(Found),
    /// Border inputs (HSPI-BI): per pair of EQCs of an image model, an input their labels split.
    Border {
        #[command(flatten)]
        found: Found,
        /// Forward passes per pair in the local search, each platform's counted.
        #[arg(long, default_value_t = hspi_probe::border::BorderConfig::default().search_evals)]
        evals: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Border prompts: per pair of platforms, the prompt their greedy texts split earliest.
    ///
    /// With `--white-box`: SmolLM2 at each of `--formats` (candle), greedy tokens that split.
    BorderPrompts {
        /// Dataset directories over one prompt set, each from a labelled platform.
        #[arg(required_unless_present = "white_box")]
        datasets: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// Search white-box on SmolLM2 (after `hspi fetch smollm2`) rather than in datasets.
        #[arg(long, conflicts_with = "datasets")]
        white_box: bool,
        /// Formats to split, white-box (llama.cpp's usual grid).
        #[arg(long, value_delimiter = ',', default_value = "f32,f16,q8_0,q4_0")]
        formats: Vec<hspi_datasets::NumericFormat>,
        /// Candidate prompts, white-box.
        #[arg(long, default_value_t = 200)]
        count: usize,
        #[command(flatten)]
        prompt: PromptArgs,
        /// SmolLM2 GGUF file (default: the `hspi fetch smollm2` cache).
        #[arg(long)]
        weights: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Seeded text prompts for endpoints (temperature 0, top-k logprobs).
    Prompts {
        #[arg(long, default_value_t = 20)]
        count: usize,
        #[command(flatten)]
        prompt: PromptArgs,
        #[arg(long)]
        out: PathBuf,
    },
}

/// A generated probe set for a model.
/// Probes found in datasets: where they come from, where they go, how the report prints.
#[derive(Debug, clap::Args)]
pub struct Found {
    /// Dataset directories over one probe set (their EQCs are the classes to separate).
    #[arg(required = true)]
    pub datasets: Vec<PathBuf>,
    #[arg(long)]
    pub out: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct Generated {
    #[arg(long, default_value = "cnn-digits")]
    pub model: String,
    #[arg(long, default_value_t = 200)]
    pub count: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub out: PathBuf,
}

/// How seeded word-list prompts are generated and what each asks for.
#[derive(Debug, clap::Args)]
pub struct PromptArgs {
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Tokens to generate per prompt.
    #[arg(long, default_value_t = 8)]
    pub max_tokens: u32,
    /// Alternatives with logprobs per generated token. OpenAI and most hosts return at most 20.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=20))]
    pub top_logprobs: u32,
}

impl PromptArgs {
    pub fn prompts(&self, count: usize) -> ProbeSet {
        hspi_probe::prompts(self.seed, count, self.max_tokens, self.top_logprobs)
    }
}
