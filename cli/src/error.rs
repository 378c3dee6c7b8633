//! What can be wrong with the flags once clap has parsed them: one variant per fault.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CliError {
    /// A flag's value does not parse as what it names.
    #[error("{flag}: {source}")]
    BadValue {
        flag: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `--routed` is not `DIR=SHARE` with a share in (0, 1).
    #[error("--routed {value}: {why}")]
    BadRouted { value: String, why: &'static str },
    /// A combination of flags lacks one it needs.
    #[error("{0}")]
    Missing(&'static str),
    #[error(transparent)]
    Classify(#[from] hspi_classify::ClassifyError),
    #[error(transparent)]
    Collect(#[from] hspi_collect::CollectError),
    #[error(transparent)]
    Audit(#[from] hspi_audit::AuditError),
}

/// `source` as the value of `flag` at fault.
pub fn bad_value<E: std::error::Error + Send + Sync + 'static>(
    flag: &'static str,
) -> impl Fn(E) -> CliError {
    move |e| CliError::BadValue {
        flag,
        source: Box::new(e),
    }
}
