//! `hspi pack`: build, extend, check, install and list audit packs.

use std::process::ExitCode;

use hspi_audit::{build_pack, merge_into_pack, PackBuild};
use hspi_cli::command_line;
use hspi_cli::pack::{BuildArgs, Command};
use hspi_collect::zoo::cache_dir;

use crate::printer;

fn build(a: BuildArgs) -> anyhow::Result<()> {
    let pack = build_pack(
        PackBuild {
            model: a.model,
            aliases: a.alias,
            formats: a.formats,
            gguf: a.gguf,
            llama_bin: a.llama_bin,
            endpoints: a.reference_endpoint,
            labels: a.label,
            api_key: hspi_collect::session::api_key_from_env(a.api_key_env.as_deref())?,
            pool: hspi_probe::union_of(&a.pool, a.count, a.seed)?,
            out: &a.out,
            force: a.force,
            command: &command_line(),
        },
        &printer::lines(),
    )?;
    printer::data(&pack.manifest.summary(&pack.dir));
    Ok(())
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    let pack = match c {
        Command::Build(a) => return build(*a).map(|_| ExitCode::SUCCESS),
        Command::Merge {
            pack,
            datasets,
            repeats,
            source,
        } => merge_into_pack(
            &pack,
            &datasets,
            &repeats,
            source.as_deref(),
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
