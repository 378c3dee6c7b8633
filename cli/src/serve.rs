#[derive(Debug, clap::Args)]
pub struct Args {
    /// The language model to serve: tiny-lm (embedded) or smollm2 (`hspi fetch smollm2`).
    #[arg(long, default_value = "tiny-lm")]
    pub model: String,
    /// Platform to compute at, e.g. cpu-avx2/candle-0.11.1/bf16/bs1 (tiny-lm) or
    /// cpu-avx2/candle-0.11.1/q8_0/bs1 (smollm2).
    #[arg(long)]
    pub platform: String,
    /// Weights file instead of the embedded or cached one.
    #[arg(long)]
    pub weights: Option<std::path::PathBuf>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
}
