//! `hspi collect` on local platforms: a zoo model, the platforms it names (groups or strings),
//! its probe set (seeded random or a file), collected into one dataset.

use std::path::Path;

use hspi_collect::session::{self, LocalSummary};
use hspi_collect::{grid, Model, ModelId, Progress};
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
}

pub fn collect_grid(
    c: GridCollection,
    progress: &dyn Progress,
) -> Result<LocalSummary, AuditError> {
    let model = Model::load(ModelId::parse(c.model)?, c.weights)?;
    let platforms = grid::platforms_to_run(c.platforms, model.id())?;
    let probes = hspi_probe::for_model(&model, c.probes, c.seed)?;
    Ok(session::collect_local(
        &model, &platforms, &probes, c.out, c.mode, c.command, progress,
    )?)
}
