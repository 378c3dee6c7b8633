//! `hspi pack`: build, extend, check, install and list audit packs.

use std::process::ExitCode;

use hspi_audit::{
    assemble_pack, build_pack, merge_into_pack, pack_slurm_script, plan_pack, run_pack_job,
    PackBuild,
};
use hspi_cli::command_line;
use hspi_cli::pack::{BuildArgs, Command};
use hspi_collect::zoo::cache_dir;

use crate::printer;

/// The build `a` asks for (`command` the command line it is recorded under).
fn pack_build<'a>(a: &'a BuildArgs, command: &'a str) -> anyhow::Result<PackBuild<'a>> {
    Ok(PackBuild {
        model: a.model.clone(),
        aliases: a.alias.clone(),
        formats: a.formats.clone(),
        gguf: a.gguf.clone(),
        llama_bin: a.llama_bin.clone(),
        endpoints: a.reference_endpoint.clone(),
        labels: a.label.clone(),
        started: (
            a.engines.clone(),
            std::time::Duration::from_secs(a.engine_wait),
        ),
        api_key: hspi_collect::session::api_key_from_env(a.api_key_env.as_deref())?,
        pool: hspi_probe::union_of(&a.pool, a.count, a.seed)?,
        out: &a.out,
        force: a.force,
        command,
    })
}

fn build(a: BuildArgs) -> anyhow::Result<()> {
    let command = command_line();
    let pack = build_pack(pack_build(&a, &command)?, &printer::lines())?;
    printer::data(&pack.manifest.summary(&pack.dir));
    Ok(())
}

fn plan(a: BuildArgs) -> anyhow::Result<()> {
    let command = command_line();
    let b = pack_build(&a, &command)?;
    let (path, summary) = plan_pack(&b, a.api_key_env.as_deref(), &a.out)?;
    printer::status(&summary);
    printer::data(&path.display().to_string());
    Ok(())
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    let pack = match c {
        Command::Build(a) => return build(*a).map(|_| ExitCode::SUCCESS),
        Command::Plan(a) => return plan(*a).map(|_| ExitCode::SUCCESS),
        Command::Slurm {
            plan,
            slurm,
            gpus,
            out,
        } => {
            let o = super::atlas::slurm_options(slurm)?;
            let script = pack_slurm_script(&plan, &o, gpus)?;
            std::fs::write(&out, script).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
            printer::data(&out.display().to_string());
            return Ok(ExitCode::SUCCESS);
        }
        Command::Job { plan, index } => {
            printer::data(&run_pack_job(&plan, index, &printer::lines())?);
            return Ok(ExitCode::SUCCESS);
        }
        Command::Assemble { plan, out, force } => {
            assemble_pack(&plan, &out, force, &command_line(), &printer::lines())?
        }
        Command::Merge(m) => merge_into_pack(
            &m.pack,
            &m.datasets,
            &m.repeats,
            m.source.as_deref(),
            m.replace,
            &command_line(),
            &printer::lines(),
        )?,
        Command::Verify { pack } => hspi_pack::Pack::open(&pack)?,
        Command::Install { pack } => hspi_pack::install(&pack, &cache_dir())?,
        Command::List => {
            printer::data(&hspi_pack::listing(&cache_dir()));
            return Ok(ExitCode::SUCCESS);
        }
    };
    printer::data(&pack.manifest.summary(&pack.dir));
    Ok(ExitCode::SUCCESS)
}
