use std::process::ExitCode;

use hspi_cli::zoo::Command;
use hspi_collect::zoo::{cnn_digits, retrain, tiny_lm};

use crate::printer;

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
