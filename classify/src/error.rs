use thiserror::Error;

#[derive(Debug, Error)]
pub enum ClassifyError {
    #[error("platform {platform} answered {have} of {total} probes: EQCs need every platform on every probe\nhint: finish the collection with `hspi collect ... --resume`")]
    Incomplete {
        platform: String,
        have: usize,
        total: usize,
    },
    #[error("platform {platform} answered probe {probe} twice with different outputs")]
    Conflict { platform: String, probe: String },
    #[error("no records to group")]
    Empty,
    #[error("{0}")]
    Param(String),
    #[error("unknown feature '{name}' (known: {known})")]
    UnknownFeature { name: String, known: String },
    #[error("the answer source failed: {0}")]
    Source(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("fitting the logistic model failed: {0}")]
    Fit(String),
    #[error("{0}")]
    Mismatch(String),
    #[error("model file {path}: {reason}")]
    ModelFile { path: String, reason: String },
}
