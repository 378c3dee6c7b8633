use std::path::PathBuf;

use thiserror::Error;

/// One variant per fault a pack can have; every message names the pack and the file.
#[derive(Debug, Error)]
pub enum PackError {
    #[error(transparent)]
    Dataset(#[from] hspi_datasets::DatasetError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not an audit pack (no pack.json)\nhint: build one with `hspi pack build`, or list installed packs with `hspi pack list`")]
    NotAPack { path: PathBuf },
    #[error("{path}: malformed {what}: {reason}")]
    Malformed {
        path: PathBuf,
        what: &'static str,
        reason: String,
    },
    #[error("{path}: pack schema {found} is not supported (this hspi reads {supported})\nhint: rebuild the pack with this hspi")]
    Schema {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("corrupt pack {pack}: {file} has sha256 {actual}, the manifest says {expected}\nhint: the file was altered after the pack was sealed; get the pack again or rebuild it")]
    Altered {
        pack: PathBuf,
        file: String,
        expected: String,
        actual: String,
    },
    #[error("corrupt pack {pack}: {file} is listed in the manifest but missing")]
    Missing { pack: PathBuf, file: String },
    #[error("corrupt pack {pack}: {file} is not listed in the manifest (added after sealing)")]
    Unlisted { pack: PathBuf, file: String },
    #[error("corrupt pack {pack}: pack.json was altered (its content is {actual}, its id says {expected})")]
    ManifestAltered {
        pack: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("the pack {pack} is for model {pack_model}, not {asked}\nhint: use a pack built for {asked} (`hspi pack list`), or pass --model {pack_model}")]
    OtherModel {
        pack: PathBuf,
        pack_model: String,
        asked: String,
    },
    #[error("no installed pack for model {model} under {dir}{}\nhint: install one with `hspi pack install DIR` or pass --pack DIR", if .installed.is_empty() { String::new() } else { format!(" (installed: {})", .installed.join(", ")) })]
    NoneInstalled {
        model: String,
        dir: PathBuf,
        installed: Vec<String>,
    },
    #[error("the pack's pool holds {pool} prompts; {asked} cannot be drawn from it")]
    Draw { pool: usize, asked: usize },
}

impl PackError {
    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> PackError + '_ {
        move |source| PackError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
