use std::path::PathBuf;
use std::process::ExitCode;

use hspi_collect::zoo::{cnn_digits, digits, sha256_file};

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
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::TrainCnn {
            digits: path,
            out_dir,
            epochs,
            seed,
        } => {
            let path = match path {
                Some(p) => p,
                None => digits::locate()?,
            };
            let data = digits::load(&path)?;
            let config = cnn_digits::TrainConfig {
                epochs,
                seed,
                ..Default::default()
            };
            printer::status(&format!(
                "training on {} digits from {}",
                data.images.len(),
                path.display()
            ));
            let (model, report) = cnn_digits::train(&data, &sha256_file(&path)?, &config)?;
            std::fs::create_dir_all(&out_dir)?;
            cnn_digits::save(&model, &out_dir.join("cnn-digits.safetensors"))?;
            let json = serde_json::to_string_pretty(&report)?;
            std::fs::write(out_dir.join("cnn-digits.json"), format!("{json}\n"))?;
            printer::data(&json);
        }
    }
    Ok(ExitCode::SUCCESS)
}
