use thiserror::Error;

#[derive(Debug, Error)]
pub enum AuditError {
    #[error(transparent)]
    Dataset(#[from] hspi_datasets::DatasetError),
    #[error(transparent)]
    Collect(#[from] hspi_collect::CollectError),
    #[error(transparent)]
    Probe(#[from] hspi_probe::ProbeError),
    #[error(transparent)]
    Classify(#[from] hspi_classify::ClassifyError),
    #[error(transparent)]
    Report(#[from] hspi_reports::ReportError),
    #[error(transparent)]
    Pack(#[from] hspi_pack::PackError),
    #[error("--claim: {0}")]
    Claim(#[from] hspi_datasets::PatternParseError),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Usage(String),
}

impl AuditError {
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> AuditError + '_ {
        move |source| AuditError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
