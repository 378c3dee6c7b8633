//! `hspi collect` on local platforms: a zoo model, the platforms it names (groups or strings),
//! its probe set (seeded random or a file), collected into one dataset.

use std::path::Path;

use hspi_collect::backend::emulated::PlanFile;
use hspi_collect::session::{self, LocalSummary};
use hspi_collect::{grid, Model, Progress};
use hspi_datasets::OpenMode;

use crate::error::AuditError;

pub struct GridCollection<'a> {
    pub model: &'a str,
    pub weights: Option<&'a Path>,
    /// Platform strings and groups (`default`, `candle`, `emulated`, `cuda`).
    pub platforms: &'a str,
    /// A number of seeded random probes, or a probe-set file.
    pub probes: &'a str,
    pub seed: u64,
    pub out: &'a Path,
    pub mode: OpenMode,
    pub command: &'a str,
    /// A kernel-plans file: GPU platforms it covers are computed on this CPU from their plans.
    pub emulate: Option<&'a Path>,
}

pub fn collect_grid(
    c: GridCollection,
    progress: &dyn Progress,
) -> Result<LocalSummary, AuditError> {
    let model = Model::named(c.model, c.weights)?;
    let plans = c.emulate.map(PlanFile::load).transpose()?;
    let platforms = match (&plans, c.platforms) {
        // `plans`: every platform the file reproduces.
        (Some(f), "plans") => f.plans.plans.iter().map(|p| p.platform.clone()).collect(),
        _ => grid::platforms_to_run(c.platforms, model.id())?,
    };
    let probes = hspi_probe::for_model(&model, c.probes, c.seed)?;
    Ok(session::collect_local(
        session::LocalCollection {
            model: &model,
            platforms: &platforms,
            probes: &probes,
            out: c.out,
            mode: c.mode,
            command: c.command,
            emulate: plans.as_ref(),
        },
        progress,
    )?)
}
