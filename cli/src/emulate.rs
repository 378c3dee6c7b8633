//! `hspi emulate`: GPU platforms on this CPU — fit kernel plans to a GPU dataset, and check how
//! much of a dataset a plans file reproduces bit for bit (`collect --emulate FILE` then collects
//! references for those GPU platforms without their GPU).

use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Answers {
    /// A dataset collected on the GPU (e.g. datasets/atlas/cnn-digits-h100).
    pub answers: PathBuf,
    /// Weights the dataset was recorded with, instead of the embedded ones.
    #[arg(long)]
    pub weights: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Recover each GPU platform's kernels (tensor-core block size, split-K, CUDA-core order per
    /// GEMM shape) from its records; write them as a kernel-plans file.
    Fit {
        #[command(flatten)]
        a: Answers,
        /// Only these platforms (repeatable; default: every GPU platform in the dataset).
        #[arg(long)]
        platform: Vec<hspi_datasets::Platform>,
        /// The kernel-plans file to write.
        #[arg(long)]
        out: PathBuf,
        /// At most this many sweeps over the GEMM shapes.
        #[arg(long, default_value_t = 4)]
        passes: usize,
    },
    /// Recompute every planned platform of a dataset here and compare bit for bit: the share of
    /// probes reproduced, and how far the rest lie (units in the last place).
    Check {
        #[command(flatten)]
        a: Answers,
        /// The kernel-plans file.
        #[arg(long)]
        plans: PathBuf,
    },
}
