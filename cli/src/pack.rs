//! `hspi pack`: build, extend, check, install and list audit packs.

use std::path::PathBuf;

use crate::atlas::SlurmArgs;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Build a pack: references computed here (--formats: llama.cpp's and hspi's own engine's)
    /// and/or from trusted endpoints.
    #[command(after_help = "Examples:
  hspi pack build --model smollm2 --alias SmolLM2-135M-Instruct --formats f32,f16,bf16,fp8,int8,int4,fp4 --out my-pack
  hspi pack build --model my-model --gguf my-model.gguf --formats f16,q8_0,q4_0 --count 96 --out my-pack
  hspi pack build --model my-model --reference-endpoint https://maker.example/v1/chat/completions \\
    --label remote-maker/vllm/bf16/bs1 --reference-endpoint https://maker.example/fp8/v1/chat/completions \\
    --label remote-maker/vllm/fp8-w8a8/bs1 --api-key-env MAKER_KEY --out my-pack")]
    Build(Box<BuildArgs>),
    /// Plan a pack build for a cluster's scheduler: the jobs `pack build` would run (one per
    /// platform) and the pool, in a directory every node sees (the same options as `pack build`;
    /// --out is the plan's directory).
    #[command(after_help = "Examples:
  hspi pack plan --model my-model --gguf /shared/my-model.gguf --formats f16,q8_0,q4_0 --out /shared/plan
  hspi pack slurm /shared/plan/plan.json --out pack.sbatch && sbatch --wait pack.sbatch
  hspi pack assemble /shared/plan/plan.json --out my-pack")]
    Plan(Box<BuildArgs>),
    /// Write an sbatch array script for a pack plan: one task per job, each running `hspi pack
    /// job PLAN --index $SLURM_ARRAY_TASK_ID`.
    Slurm {
        plan: PathBuf,
        #[command(flatten)]
        slurm: SlurmArgs,
        /// Ask a GPU for each task (engines started on it).
        #[arg(long)]
        gpus: bool,
        #[arg(long)]
        out: PathBuf,
    },
    /// Run one job of a pack plan: start its engine, collect its platform's references into
    /// the plan's shards/ (a finished job is kept, an unfinished one made again).
    Job {
        plan: PathBuf,
        #[arg(long)]
        index: usize,
    },
    /// Seal the pack of a plan from its finished jobs, as `pack build` would have.
    Assemble {
        plan: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        force: bool,
    },
    /// Add reference datasets collected elsewhere (a GPU host, a Slurm shard) to a pack.
    Merge(MergeArgs),
    /// Check every file of a pack against its manifest.
    Verify { pack: PathBuf },
    /// Check a pack and copy it under the cache directory (`hspi audit --model M` finds it).
    Install { pack: PathBuf },
    /// Show the installed packs.
    List,
}

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    pub pack: PathBuf,
    #[arg(required = true)]
    pub datasets: Vec<PathBuf>,
    /// Datasets asked again on the same platforms (determinism flags).
    #[arg(long, num_args = 1..)]
    pub repeats: Vec<PathBuf>,
    /// What produced the datasets, as the pack's platform list shows it (default: "merged
    /// from PATH").
    #[arg(long)]
    pub source: Option<String>,
    /// Each dataset replaces the pack's references (and repeats) of its platform instead of
    /// joining them: an engine computed again after a fix.
    #[arg(long)]
    pub replace: bool,
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The model's name: what endpoints are asked for, and what the pack is found by.
    #[arg(long, help_heading = "Model")]
    pub model: String,
    /// Other names providers serve the model under.
    #[arg(long, help_heading = "Model")]
    pub alias: Vec<String>,
    /// Formats to compute here from --gguf: GGUF formats through llama.cpp (f32, f16, q8_0,
    /// q4_0 …, made by llama-quantize); the market's formats through hspi's own engine as vLLM
    /// computes them (bf16, fp8-w8a16, fp8-w8a8, int8-w8a8, int4-w4a16-g64, nvfp4-a16,
    /// nvfp4-w4a4, mxfp4); router words as every format they cover (fp8, int8 = q8_0 and
    /// int8-w8a8, int4 = q4_0 and int4-w4a16-g64, fp4, nvfp4).
    #[arg(long, value_delimiter = ',', help_heading = "References computed here")]
    pub formats: Vec<String>,
    /// The weights (default: the fetched file of a model `hspi fetch` knows, e.g. smollm2).
    #[arg(long, help_heading = "Model")]
    pub gguf: Option<PathBuf>,
    /// The llama.cpp build's bin directory (default: .ci/build-llama avx2's, in the cache).
    #[arg(long, help_heading = "References computed here")]
    pub llama_bin: Option<PathBuf>,
    /// A trusted endpoint to collect references from (repeatable; one --label each).
    #[arg(long, help_heading = "References from trusted endpoints")]
    pub reference_endpoint: Vec<String>,
    /// The platform each --reference-endpoint runs, in the same order.
    #[arg(long, help_heading = "References from trusted endpoints")]
    pub label: Vec<String>,
    /// Environment variable holding the trusted endpoints' API key.
    #[arg(long, help_heading = "References from trusted endpoints")]
    pub api_key_env: Option<String>,
    /// An engine the build (each task of a plan, on its node) starts itself and collects from
    /// as a trusted endpoint, written PLATFORM=COMMAND: COMMAND serves the model's chat API on
    /// the port `{port}` stands for (e.g. 'cuda-nvidia-h100-sm90-132sm/vllm-0.32.0/bf16/bs1=vllm
    /// serve MODEL --port {port} --dtype bfloat16'); stopped when its references are collected
    /// (repeatable).
    #[arg(
        long = "engine",
        value_name = "PLATFORM=COMMAND",
        help_heading = "References from trusted endpoints"
    )]
    pub engines: Vec<hspi_collect::started_engine::EngineCommand>,
    /// Seconds each --engine may take to load and answer its /health.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 900,
        help_heading = "References from trusted endpoints"
    )]
    pub engine_wait: u64,
    /// The pool: prompt-set files (`hspi probe prompts`), or generated with --count/--seed.
    #[arg(long, help_heading = "Pool")]
    pub pool: Vec<PathBuf>,
    #[arg(long, default_value_t = 96, help_heading = "Pool")]
    pub count: usize,
    #[arg(long, default_value_t = 11, help_heading = "Pool")]
    pub seed: u64,
    #[arg(long, help_heading = "Output")]
    pub out: PathBuf,
    #[arg(long, help_heading = "Output")]
    pub force: bool,
}
