use thiserror::Error;

#[derive(Debug, Error)]
pub enum ReportError {
    #[error("--format {name}: expected one of {known}")]
    UnknownFormat { name: String, known: String },
    #[error("{origin}: not JSON ({source})")]
    NotJson {
        origin: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{origin}: schema '{found}' is not {expected} (write it with `hspi audit`, or `verify`/`identify`/`eval --report FILE`)")]
    Schema {
        origin: String,
        found: String,
        expected: &'static str,
    },
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: malformed report ({source})")]
    Malformed {
        origin: String,
        #[source]
        source: serde_json::Error,
    },
}
