use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ProbeError {
    #[error(transparent)]
    Dataset(#[from] hspi_datasets::DatasetError),
    #[error(transparent)]
    Collect(#[from] hspi_collect::CollectError),
    #[error(transparent)]
    Classify(#[from] hspi_classify::ClassifyError),
    #[error("{what}: {reason}")]
    Unusable { what: String, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a probe-set file: {reason}\nhint: write one with `hspi probe random`")]
    Malformed { path: PathBuf, reason: String },
    #[error(
        "{path}: probe {index} has id {id} but its content hashes differently (edited by hand?)"
    )]
    IdMismatch {
        path: PathBuf,
        index: usize,
        id: String,
    },
    #[error("--probes 0: at least one probe is needed")]
    NoProbes,
    #[error("probe {probe} in {spec} does not fit model {model}\nhint: generate probes for this model with `hspi probe random --model {model}`")]
    DoesNotFit {
        probe: String,
        spec: String,
        model: String,
    },
    #[error("{path}: probes {first} and {index} are the same input (id {id}); a probe set holds each input once")]
    Duplicate {
        path: PathBuf,
        first: usize,
        index: usize,
        id: String,
    },
}
