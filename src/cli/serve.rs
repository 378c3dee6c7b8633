use std::process::ExitCode;

use hspi_collect::{serve, zoo::TinyLm};

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model to serve (the embedded tiny-lm, or --weights).
    #[arg(long, default_value = "tiny-lm")]
    model: String,
    /// Platform to compute at, e.g. cpu-avx2/candle-0.11.1/bf16/bs1.
    #[arg(long)]
    platform: String,
    /// Weights file instead of the embedded one.
    #[arg(long)]
    weights: Option<std::path::PathBuf>,
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    #[arg(long, default_value_t = 8080)]
    port: u16,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.model == "tiny-lm",
        "hspi serve runs the tiny-lm only (its tokenizer is its vocabulary); '{}' needs a tokenizer hspi does not have yet",
        args.model
    );
    let lm = match &args.weights {
        Some(p) => TinyLm::load_file(p)?,
        None => TinyLm::embedded(),
    };
    let platform = args.platform.parse()?;
    let handle = serve::start(lm, &platform, &format!("{}:{}", args.host, args.port))?;
    printer::status(&format!(
        "serving tiny-lm at {platform} on {}",
        handle.base_url()
    ));
    printer::data(&handle.base_url());
    handle.join();
    Ok(ExitCode::SUCCESS)
}
