//! An `sbatch` array script for a plan: one array task per shard, logs and datasets on the
//! shared filesystem next to the plan.

use std::path::Path;

use super::Plan;

pub struct SlurmOptions {
    /// The hspi binary as the nodes see it.
    pub hspi: String,
    pub partition: Option<String>,
    pub time: Option<String>,
    pub cpus_per_task: usize,
}

pub fn script(plan: &Plan, plan_path: &Path, o: &SlurmOptions) -> String {
    let base = Plan::base(plan_path);
    let gpus = plan.shards.iter().any(|s| s.node == "gpu");
    let mut s = String::from("#!/bin/bash\n");
    s.push_str(&format!("#SBATCH --job-name=hspi-atlas-{}\n", plan.model));
    s.push_str(&format!(
        "#SBATCH --array=0-{}\n",
        plan.shards.len().saturating_sub(1)
    ));
    s.push_str(&format!(
        "#SBATCH --output={}/logs/shard-%a.log\n",
        base.display()
    ));
    s.push_str(&format!("#SBATCH --cpus-per-task={}\n", o.cpus_per_task));
    if let Some(p) = &o.partition {
        s.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    if let Some(t) = &o.time {
        s.push_str(&format!("#SBATCH --time={t}\n"));
    }
    if gpus {
        // One array, one request: GPU shards need a GPU; CPU shards sharing the array get one too.
        s.push_str("#SBATCH --gres=gpu:1\n");
    }
    s.push_str(&format!(
        "# {} shards of {} over probe set {} (plan {})\n",
        plan.shards.len(),
        plan.model,
        &plan.probe_set_hash[..plan.probe_set_hash.len().min(12)],
        plan_path.display()
    ));
    s.push_str("set -euo pipefail\n");
    s.push_str(&format!(
        "exec \"{}\" collect --plan \"{}\" --shard \"$SLURM_ARRAY_TASK_ID\"\n",
        o.hspi,
        plan_path.display()
    ));
    s
}
