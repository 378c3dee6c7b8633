//! scikit-learn's bundled digits (1797 8x8 images, 17 grey levels): `sklearn/datasets/data/digits.csv.gz`.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{CollectError, Result};

pub struct Digits {
    /// Each image 64 floats in [0, 1].
    pub images: Vec<Vec<f32>>,
    pub labels: Vec<u32>,
}

/// Find the file in the installed scikit-learn, asking python3 where it lives.
pub fn locate() -> Result<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os, sklearn; print(os.path.join(os.path.dirname(sklearn.__file__), 'datasets', 'data', 'digits.csv.gz'))",
        ])
        .output()
        .map_err(|e| CollectError::TrainingData(format!("cannot run python3: {e}")))?;
    if !out.status.success() {
        return Err(CollectError::TrainingData(
            "scikit-learn is not installed\nhint: python3 -m pip install scikit-learn, or pass --digits PATH".into(),
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

pub fn load(path: &Path) -> Result<Digits> {
    let file = std::fs::File::open(path).map_err(CollectError::io(path))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .map_err(CollectError::io(path))?;
    let mut images = Vec::new();
    let mut labels = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let values: Vec<f32> = line
            .split(',')
            .map(|v| v.trim().parse::<f32>())
            .collect::<Result<_, _>>()
            .map_err(|e| {
                CollectError::TrainingData(format!("{}: line {}: {e}", path.display(), n + 1))
            })?;
        if values.len() != 65 {
            return Err(CollectError::TrainingData(format!(
                "{}: line {}: expected 65 values, found {}",
                path.display(),
                n + 1,
                values.len()
            )));
        }
        images.push(values[..64].iter().map(|v| v / 16.0).collect());
        labels.push(values[64] as u32);
    }
    Ok(Digits { images, labels })
}
