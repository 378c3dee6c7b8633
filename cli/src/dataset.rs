use std::path::PathBuf;

use hspi_datasets::export::ExportFormat;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Export records as one flat table (pandas/polars read it with no hspi code).
    Export {
        /// Dataset directory.
        dataset: PathBuf,
        /// csv or parquet.
        #[arg(long)]
        format: ExportFormat,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Check the manifest, checksums and every record.
    Verify {
        /// Dataset directory.
        dataset: PathBuf,
    },
    /// Compare two datasets record for record: the same platform (or the only one on each side)
    /// answering the same probes with the same bits? Exit 0 when all are identical, 1 otherwise.
    Diff {
        left: PathBuf,
        right: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Compute hspi's references on the tokens of answers collected before or elsewhere (teacher
    /// forcing, as a fresh audit does while it asks), one dataset per run: later, on another
    /// machine, or one format per job of a cluster's array; `hspi verify ANSWERS --references
    /// REFS…` then weighs the answers against them.
    References {
        #[command(flatten)]
        forced: ForcedArgs,
        /// The references' dataset directory.
        #[arg(long)]
        out: PathBuf,
        /// Replace --out if it exists.
        #[arg(long)]
        force: bool,
        /// Hold every format's engine between answers, or make each per answer (as `audit
        /// --fresh-memory`).
        #[arg(long, value_name = "auto|resident|per-answer", default_value = "auto")]
        memory: hspi_collect::residency::Residency,
        #[command(flatten)]
        engines: crate::reference_engines::ReferenceEngineArgs,
        #[command(flatten)]
        started: StartedEngineArgs,
    },
    /// Write an sbatch array computing `dataset references` one format per task, each into
    /// OUT/FORMAT (logs in OUT/logs): the fresh references of a large model's answers on a
    /// cluster's nodes; then `hspi verify ANSWERS --references OUT/*` weighs them together.
    ReferencesSlurm {
        /// The formats: one task each.
        #[command(flatten)]
        forced: ForcedArgs,
        /// Where the tasks write their references (one dataset per format) and logs.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        slurm: crate::atlas::SlurmArgs,
        /// Ask a GPU for each task.
        #[arg(long)]
        gpus: bool,
        #[command(flatten)]
        engines: StartedEngineArgs,
        /// The script to write.
        #[arg(long)]
        script: PathBuf,
    },
    /// Merge shard datasets (e.g. an atlas plan's shards) into one, checking probe set, model
    /// and schema, refusing duplicate records, keeping every shard's provenance.
    Merge {
        /// Shard dataset directories.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// The merged dataset directory (must not exist).
        #[arg(long)]
        out: PathBuf,
        /// A later shard's platforms replace those platforms' records in earlier shards (one
        /// format of a reference set computed again), instead of refusing them as duplicates.
        #[arg(long)]
        replace: bool,
    },
}

/// What `dataset references` computes, and on what.
#[derive(Debug, clap::Args)]
pub struct ForcedArgs {
    /// The answers' dataset (`hspi collect --out DIR`, or an audit's `--out DIR`).
    pub answers: PathBuf,
    /// The model's weights (a GGUF file or a checkpoint directory, as the nodes see it).
    #[arg(long)]
    pub weights: PathBuf,
    /// hspi's formats (comma-separated: f16,q8_0,q4_0,f16+kv-q8_0, …); none where engines you
    /// run compute every reference.
    #[arg(long, value_delimiter = ',')]
    pub formats: Vec<hspi_datasets::NumericFormat>,
}

/// Engines hspi starts for itself and computes references with (one task each in an array).
#[derive(Debug, clap::Args)]
pub struct StartedEngineArgs {
    /// An engine to start and compute references with, written PLATFORM=COMMAND: COMMAND serves
    /// the model on the port `{port}` stands for (e.g. 'cpu-avx2/vllm-0.32.0/f32/bs1=vllm serve
    /// MODEL --port {port} --dtype float32'); the platform is taken on your word. Started in a
    /// process group of its own, stopped when its references are written (repeatable).
    #[arg(long = "engine", value_name = "PLATFORM=COMMAND")]
    pub engines: Vec<hspi_collect::started_engine::EngineCommand>,
    /// How the engines are asked: `completions` (vLLM's, prompt logprobs) or `llama-server`.
    #[arg(long, value_enum, default_value = "completions")]
    pub engine_api: EngineApiArg,
    /// Seconds an engine may take to load and answer its /health.
    #[arg(long, value_name = "SECONDS", default_value_t = 900)]
    pub engine_wait: u64,
}

impl StartedEngineArgs {
    pub fn started_engines(self) -> hspi_audit::StartedEngines {
        hspi_audit::StartedEngines {
            engines: self.engines,
            api: self.engine_api.into(),
            wait: std::time::Duration::from_secs(self.engine_wait),
        }
    }
}

/// `--engine-api`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum EngineApiArg {
    Completions,
    LlamaServer,
}

impl From<EngineApiArg> for hspi_audit::EngineApi {
    fn from(a: EngineApiArg) -> hspi_audit::EngineApi {
        match a {
            EngineApiArg::Completions => hspi_audit::EngineApi::Completions,
            EngineApiArg::LlamaServer => hspi_audit::EngineApi::LlamaServer,
        }
    }
}
