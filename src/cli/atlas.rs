//! `hspi atlas plan|slurm|k8s` and the shard side of `hspi collect --plan`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use hspi_collect::atlas::{k8s, plan::PROBES_FILE, slurm, Plan};
use hspi_collect::grid;
use hspi_collect::zoo::{Model, ModelId};

use crate::printer;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Split a collection (model x platforms x probes) into shards; writes DIR/plan.json and
    /// DIR/probes.json on the shared filesystem.
    Plan {
        #[arg(long, default_value = "cnn-digits")]
        model: String,
        /// As `collect --platforms`: platform strings and groups (`default`, `candle`,
        /// `emulated`, `cuda`); GPU platforms get GPU shards.
        #[arg(long, default_value = "default")]
        platforms: String,
        /// A number of seeded random probes, or a probe-set file.
        #[arg(long, default_value = "200")]
        probes: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        shards: usize,
        /// Plan directory (created).
        #[arg(long)]
        out: PathBuf,
    },
    /// Write an sbatch array script: one task per shard.
    Slurm {
        plan: PathBuf,
        /// The hspi binary as the nodes see it (default: this one).
        #[arg(long)]
        hspi: Option<String>,
        #[arg(long)]
        partition: Option<String>,
        /// Time limit per shard, e.g. 02:00:00.
        #[arg(long)]
        time: Option<String>,
        #[arg(long, default_value_t = 2)]
        cpus_per_task: usize,
        #[arg(long)]
        out: PathBuf,
    },
    /// Write a Kubernetes Indexed Job manifest: one pod per shard.
    K8s {
        plan: PathBuf,
        /// Container image with hspi on its PATH.
        #[arg(long)]
        image: String,
        /// PersistentVolumeClaim holding the plan directory.
        #[arg(long)]
        claim: String,
        /// Where the claim is mounted (the plan path must lie under it).
        #[arg(long, default_value = "/atlas")]
        mount: String,
        #[arg(long)]
        out: PathBuf,
    },
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("resolving {}", p.display()))
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    match c {
        Command::Plan {
            model,
            platforms,
            probes,
            seed,
            shards,
            out,
        } => {
            let m = Model::load(ModelId::parse(&model)?, None)?;
            // Platforms are listed as asked, not checked here: the plan is for other machines.
            let list = grid::parse_platforms(&platforms, m.id())?;
            let set = hspi_probe::for_model(&m, &probes, seed)?;
            let plan = Plan::new(&model, &set, &list, shards)?;
            std::fs::create_dir_all(out.join("logs"))
                .with_context(|| format!("creating {}", out.display()))?;
            hspi_probe::write_probe_set(&out.join(PROBES_FILE), &set)?;
            let path = out.join("plan.json");
            plan.write(&path)?;
            printer::status(&format!(
                "plan: {} platforms of {model} over {} probes in {} shards ({} on GPU nodes)",
                list.len(),
                set.probes.len(),
                plan.shards.len(),
                plan.shards.iter().filter(|s| s.node == "gpu").count()
            ));
            printer::data(&path.display().to_string());
        }
        Command::Slurm {
            plan,
            hspi,
            partition,
            time,
            cpus_per_task,
            out,
        } => {
            let path = absolute(&plan)?;
            let p = Plan::read(&path)?;
            let here = || std::env::current_exe().map(|p| p.display().to_string());
            let hspi = hspi.map_or_else(here, Ok)?;
            let o = slurm::SlurmOptions {
                hspi,
                partition,
                time,
                cpus_per_task,
            };
            std::fs::write(&out, slurm::script(&p, &path, &o))
                .with_context(|| format!("writing {}", out.display()))?;
            printer::data(&out.display().to_string());
        }
        Command::K8s {
            plan,
            image,
            claim,
            mount,
            out,
        } => {
            let path = absolute(&plan)?;
            let p = Plan::read(&path)?;
            let o = k8s::K8sOptions {
                image,
                claim,
                mount,
            };
            std::fs::write(&out, k8s::manifest(&p, &path, &o)?)
                .with_context(|| format!("writing {}", out.display()))?;
            printer::data(&out.display().to_string());
        }
    }
    Ok(ExitCode::SUCCESS)
}
