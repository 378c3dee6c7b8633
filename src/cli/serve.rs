use std::process::ExitCode;

use hspi_collect::serve;
use hspi_collect::zoo::{Model, ModelId};

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The language model to serve: tiny-lm (embedded) or smollm2 (`hspi fetch smollm2`).
    #[arg(long, default_value = "tiny-lm")]
    model: String,
    /// Platform to compute at, e.g. cpu-avx2/candle-0.11.1/bf16/bs1 (tiny-lm) or
    /// cpu-avx2/candle-0.11.1/q8_0/bs1 (smollm2).
    #[arg(long)]
    platform: String,
    /// Weights file instead of the embedded or cached one.
    #[arg(long)]
    weights: Option<std::path::PathBuf>,
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    #[arg(long, default_value_t = 8080)]
    port: u16,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let id = ModelId::parse(&args.model)?;
    let platform = args.platform.parse()?;
    let model = Model::load(id, args.weights.as_deref())?;
    let handle = serve::start(model, &platform, &format!("{}:{}", args.host, args.port))?;
    printer::status(&format!(
        "serving {} at {platform} on {}",
        id.name(),
        handle.base_url()
    ));
    printer::data(&handle.base_url());
    handle.join();
    Ok(ExitCode::SUCCESS)
}
