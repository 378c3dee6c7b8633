//! `hspi atlas plan|slurm|k8s` and the shard side of `hspi collect --plan`.

use std::path::PathBuf;

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
        #[command(flatten)]
        slurm: SlurmArgs,
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

/// What an sbatch array asks of the scheduler (`atlas slurm`, `pack slurm`).
#[derive(Debug, clap::Args)]
pub struct SlurmArgs {
    /// The hspi binary as the nodes see it (default: this one).
    #[arg(long)]
    pub hspi: Option<String>,
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit per task, e.g. 02:00:00.
    #[arg(long)]
    pub time: Option<String>,
    #[arg(long, default_value_t = 2)]
    pub cpus_per_task: usize,
}
