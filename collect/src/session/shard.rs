//! One shard of an atlas plan: which model, platforms, probes and directory it collects.

use std::path::{Path, PathBuf};

use crate::atlas::Plan;
use crate::error::{CollectError, Result};

/// What a shard collects, read from its plan.
#[derive(Debug, Clone)]
pub struct ShardAssignment {
    pub index: usize,
    pub shards: usize,
    pub node: String,
    pub model: String,
    pub platforms: Vec<String>,
    pub probes: PathBuf,
    pub out: PathBuf,
    /// The shard's dataset exists already: continue it.
    pub resume: bool,
}

impl ShardAssignment {
    pub fn read(plan_path: &Path, index: usize) -> Result<ShardAssignment> {
        let plan = Plan::read(plan_path)?;
        let shard = plan.shard(plan_path, index)?;
        let base = Plan::base(plan_path);
        let out = base.join(&shard.out);
        Ok(ShardAssignment {
            index,
            shards: plan.shards.len(),
            node: shard.node.clone(),
            model: plan.model.clone(),
            platforms: shard.platforms.clone(),
            probes: base.join(&plan.probes),
            resume: out.join(hspi_datasets::store::MANIFEST).exists(),
            out,
        })
    }
}

/// The shard index from the flag, or from the scheduler's array index.
pub fn shard_index(flag: Option<usize>) -> Result<usize> {
    if let Some(i) = flag {
        return Ok(i);
    }
    for var in ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"] {
        if let Ok(v) = std::env::var(var) {
            return v.trim().parse().map_err(|_| CollectError::Plan {
                path: format!("${var}"),
                reason: format!("'{v}' is not a shard index"),
            });
        }
    }
    Err(CollectError::Plan {
        path: "--plan".into(),
        reason:
            "needs --shard I (or $SLURM_ARRAY_TASK_ID / $JOB_COMPLETION_INDEX from the scheduler)"
                .into(),
    })
}

impl std::fmt::Display for ShardAssignment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "shard {} of {}: {} platforms on a {} node into {}",
            self.index,
            self.shards,
            self.platforms.len(),
            self.node,
            self.out.display()
        )
    }
}
