//! Atlas collection at scale on the schedulers clusters already run: a plan of shards, one
//! `hspi collect --plan FILE --shard I` per shard (Slurm array task or Kubernetes indexed job),
//! then `hspi dataset merge`.

pub mod k8s;
pub mod plan;
pub mod slurm;

pub use plan::{Plan, Shard};

use std::path::Path;

use crate::error::CollectError;

/// Render a job file for the plan at `plan` (made absolute: the nodes read it from the shared
/// filesystem) with `render`, and write it to `out`.
pub fn write_job(
    plan: &Path,
    out: &Path,
    render: impl FnOnce(&Plan, &Path) -> Result<String, CollectError>,
) -> Result<(), CollectError> {
    let path = std::path::absolute(plan).map_err(CollectError::io(plan))?;
    let text = render(&Plan::read(&path)?, &path)?;
    std::fs::write(out, text).map_err(CollectError::io(out))
}
