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
    #[error("the watch's total budget is spent: {requests} requests and {cost:.6} in charges (--total-max-requests {}, --total-max-cost {}); every round so far is kept", fmt_cap(max_requests), fmt_cap(max_cost))]
    WatchBudget {
        requests: u64,
        cost: f64,
        max_requests: Option<u64>,
        max_cost: Option<f64>,
    },
}

fn fmt_cap<T: std::fmt::Display>(cap: &Option<T>) -> String {
    cap.as_ref().map_or("unset".into(), ToString::to_string)
}

impl AuditError {
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> AuditError + '_ {
        move |source| AuditError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
