use std::path::PathBuf;
use std::process::ExitCode;

use hspi_collect::{Model, ModelId};

use crate::printer;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Seeded random probes for a model (8-bit images, or token ids).
    Random {
        #[arg(long, default_value = "cnn-digits")]
        model: String,
        #[arg(long, default_value_t = 200)]
        count: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
    /// Seeded text prompts for endpoints (temperature 0, top-k logprobs).
    Prompts {
        #[arg(long, default_value_t = 20)]
        count: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Tokens to generate per prompt.
        #[arg(long, default_value_t = 8)]
        max_tokens: u32,
        /// Alternatives with logprobs per generated token.
        #[arg(long, default_value_t = 5)]
        top_logprobs: u32,
        #[arg(long)]
        out: PathBuf,
    },
}

fn write(set: &hspi_datasets::ProbeSet, out: &std::path::Path) -> anyhow::Result<()> {
    hspi_probe::write_probe_set(out, set)?;
    printer::status(&format!(
        "wrote {} probes (set {}) to {}",
        set.probes.len(),
        &set.hash()[..12],
        out.display()
    ));
    Ok(())
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Random {
            model,
            count,
            seed,
            out,
        } => {
            let id = ModelId::parse(&model)?;
            // Only the input shape matters here, so the language model needs no weights.
            let set = match id {
                ModelId::SmolLm2 => hspi_probe::random_tokens(seed, count, 49152, 12),
                _ => {
                    let m = Model::load(id, None)?;
                    super::collect::probe_set_for(&m, &count.to_string(), seed)?
                }
            };
            write(&set, &out)?;
        }
        Command::Prompts {
            count,
            seed,
            max_tokens,
            top_logprobs,
            out,
        } => write(
            &hspi_probe::prompts(seed, count, max_tokens, top_logprobs),
            &out,
        )?,
    }
    Ok(ExitCode::SUCCESS)
}
