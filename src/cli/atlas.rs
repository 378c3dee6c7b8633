//! `hspi atlas plan|slurm|k8s` and the shard side of `hspi collect --plan`.

use std::process::ExitCode;

use hspi_cli::atlas::Command;
use hspi_collect::atlas::{k8s, slurm, write_job};

use crate::printer;

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    let out = match c {
        Command::Plan {
            model,
            platforms,
            probes,
            seed,
            shards,
            out,
        } => {
            let (path, summary) =
                hspi_audit::plan_atlas(&model, &platforms, &probes, seed, shards, &out)?;
            printer::status(&summary);
            path
        }
        Command::Slurm {
            plan,
            hspi,
            partition,
            time,
            cpus_per_task,
            out,
        } => {
            let here = || std::env::current_exe().map(|p| p.display().to_string());
            let o = slurm::SlurmOptions {
                hspi: hspi.map_or_else(here, Ok)?,
                partition,
                time,
                cpus_per_task,
            };
            write_job(&plan, &out, |p, path| Ok(slurm::script(p, path, &o)))?;
            out
        }
        Command::K8s {
            plan,
            image,
            claim,
            mount,
            out,
        } => {
            let o = k8s::K8sOptions {
                image,
                claim,
                mount,
            };
            write_job(&plan, &out, |p, path| k8s::manifest(p, path, &o))?;
            out
        }
    };
    printer::data(&out.display().to_string());
    Ok(ExitCode::SUCCESS)
}
