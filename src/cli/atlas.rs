//! `hspi atlas plan|slurm|k8s` and the shard side of `hspi collect --plan`.

use std::process::ExitCode;

use hspi_cli::atlas::{Command, SlurmArgs};
use hspi_collect::atlas::{k8s, slurm, write_job};

use crate::printer;

/// The array's options, the hspi binary this one unless named.
pub fn slurm_options(a: SlurmArgs) -> anyhow::Result<slurm::SlurmOptions> {
    let here = || std::env::current_exe().map(|p| p.display().to_string());
    Ok(slurm::SlurmOptions {
        hspi: a.hspi.map_or_else(here, Ok)?,
        partition: a.partition,
        time: a.time,
        cpus_per_task: a.cpus_per_task,
    })
}

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
        Command::Slurm { plan, slurm, out } => {
            let o = slurm_options(slurm)?;
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
