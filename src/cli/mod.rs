//! One `run` per command: the arguments (`hspi_cli`) in, the libraries called, the outcome printed
//! and mapped to an exit code.

mod atlas;
mod audit;
mod bundle;
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

use hspi_cli::{Cli, Command};

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
