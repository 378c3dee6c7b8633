//! `hspi emulate`: GPU platforms on this CPU — fit kernel plans to a GPU dataset, and check how
//! much of a dataset a plans file reproduces bit for bit (`collect --emulate FILE` then collects
//! references for those GPU platforms without their GPU).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Answers {
    /// A dataset collected on the GPU (e.g. datasets/atlas/cnn-digits-h100).
    answers: PathBuf,
    /// Weights the dataset was recorded with, instead of the embedded ones.
    #[arg(long)]
    weights: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
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

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Fit {
            a,
            platform,
            out,
            passes,
        } => {
            let w = a.weights.as_deref();
            let plans = hspi_audit::fit_plans(&a.answers, &platform, w, passes, &mut |plan| {
                printer::status(&hspi_audit::fitted_line(plan))
            })?;
            plans.save(&out)?;
            printer::status(&format!(
                "wrote {} plans to {}",
                plans.plans.len(),
                out.display()
            ));
            printer::json_or(a.json, &plans, |_| out.display().to_string())?;
        }
        Command::Check { a, plans } => {
            let checks = hspi_audit::check_plans(&plans, &a.answers, a.weights.as_deref())?;
            printer::json_or(a.json, &checks, |c| hspi_audit::checks_text(c))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
