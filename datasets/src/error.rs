use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum DatasetError {
    #[error("cannot merge shard {shard}: {reason}", shard = .shard.display())]
    Merge { shard: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a dataset (no manifest.json)\nhint: create it with `hspi collect --out {path}`")]
    NotADataset { path: PathBuf },
    #[error("{path}: already exists\nhint: pass --resume to continue that collection or --force to replace it")]
    AlreadyExists { path: PathBuf },
    #[error("{path}: schema version {found} is not supported (this hspi reads version {supported})\nhint: use the hspi release that wrote it, or recollect")]
    SchemaVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: malformed {what}: {reason}")]
    Malformed {
        path: PathBuf,
        what: &'static str,
        reason: String,
    },
    #[error("corrupt dataset: {shard}, record {record} (line {record}): {reason}")]
    CorruptRecord {
        shard: PathBuf,
        record: usize,
        reason: String,
    },
    #[error(
        "corrupt dataset: {file}: sha256 {actual} does not match checksums.sha256 ({expected})"
    )]
    Checksum {
        file: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("{path}: cannot resume: {reason}")]
    ResumeMismatch { path: PathBuf, reason: String },
    #[error("duplicate record: probe {probe} on {platform} is already in the dataset")]
    Duplicate { probe: String, platform: String },
    #[error("{reason}")]
    Incompatible { reason: String },
    #[error("no dataset given")]
    NoDatasets,
    #[error("unknown export format '{0}' (expected csv or parquet)")]
    UnknownExportFormat(String),
    #[error("export to {path}: {reason}")]
    Export { path: PathBuf, reason: String },
}

impl DatasetError {
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> DatasetError {
        let path = path.into();
        move |source| DatasetError::Io { path, source }
    }
}

pub type Result<T, E = DatasetError> = std::result::Result<T, E>;
