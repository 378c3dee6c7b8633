//! `hspi emulate`: GPU platforms reproduced on this CPU — fit kernel plans to a GPU dataset, and
//! check how much of a dataset a plans file reproduces bit for bit. `hspi collect --emulate FILE`
//! then collects references for those GPU platforms without their GPU.

use std::path::PathBuf;
use std::process::ExitCode;

use hspi_datasets::Platform;

use crate::printer;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Recover each GPU platform's kernels (tensor-core block size, split-K, CUDA-core order per
    /// GEMM shape) from its records, and write them as a kernel-plans file.
    Fit {
        /// A dataset collected on the GPU (e.g. datasets/atlas/cnn-digits-h100).
        answers: PathBuf,
        /// Only these platforms (repeatable; default: every GPU platform in the dataset).
        #[arg(long)]
        platform: Vec<Platform>,
        /// The kernel-plans file to write.
        #[arg(long)]
        out: PathBuf,
        /// At most this many sweeps over the GEMM shapes.
        #[arg(long, default_value_t = 4)]
        passes: usize,
        /// Weights the dataset was recorded with, instead of the embedded ones.
        #[arg(long)]
        weights: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Recompute every planned platform of a dataset on this CPU and compare bit for bit:
    /// the share of probes reproduced, and how far the rest lie (units in the last place).
    Check {
        /// A dataset collected on the GPU.
        answers: PathBuf,
        /// The kernel-plans file.
        #[arg(long)]
        plans: PathBuf,
        /// Weights the dataset was recorded with, instead of the embedded ones.
        #[arg(long)]
        weights: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Fit {
            answers,
            platform,
            out,
            passes,
            weights,
            json,
        } => {
            let plans = hspi_audit::fit_plans(
                &answers,
                &platform,
                weights.as_deref(),
                passes,
                &mut |plan| {
                    if let Some(f) = &plan.fit {
                        printer::status(&format!(
                            "{}: {}/{} probes reproduced bit for bit",
                            plan.platform, f.probes_matched, f.probes
                        ));
                    }
                },
            )?;
            plans.save(&out)?;
            printer::status(&format!(
                "wrote {} kernel plans to {}",
                plans.plans.len(),
                out.display()
            ));
            if json {
                printer::data(&serde_json::to_string_pretty(&plans)?);
            }
        }
        Command::Check {
            answers,
            plans,
            weights,
            json,
        } => {
            let checks = hspi_audit::check_plans(&plans, &answers, weights.as_deref())?;
            printer::json_or(json, &checks, |c| hspi_audit::checks_text(c))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
