//! `hspi atlas plan`: split a collection (model × platforms × probes) into shards and write the
//! plan and its probe set where every node reads them.

use std::path::{Path, PathBuf};

use hspi_collect::atlas::{plan::PROBES_FILE, Plan};
use hspi_collect::grid;
use hspi_collect::zoo::{Model, ModelId};

use crate::error::AuditError;

/// Write `out/plan.json`, `out/probes.json` and `out/logs/`; the plan's path and a summary.
pub fn plan_atlas(
    model: &str,
    platforms: &str,
    probes: &str,
    seed: u64,
    shards: usize,
    out: &Path,
) -> Result<(PathBuf, String), AuditError> {
    let m = Model::load(ModelId::parse(model)?, None)?;
    // Platforms are listed as asked, not checked here: the plan is for other machines.
    let list = grid::parse_platforms(platforms, m.id())?;
    let set = hspi_probe::for_model(&m, probes, seed)?;
    let plan = Plan::new(model, &set, &list, shards)?;
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).map_err(AuditError::io(&logs))?;
    hspi_probe::write_probe_set(&out.join(PROBES_FILE), &set)?;
    let path = out.join("plan.json");
    plan.write(&path)?;
    let summary = format!(
        "plan: {} platforms of {model} over {} probes in {} shards ({} on GPU nodes)",
        list.len(),
        set.probes.len(),
        plan.shards.len(),
        plan.shards.iter().filter(|s| s.node == "gpu").count()
    );
    Ok((path, summary))
}
