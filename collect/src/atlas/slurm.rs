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

/// An array script's `#SBATCH` lines: `tasks` tasks named `name`, each logging to `log` (`%a`
/// the task index), with `o`'s partition, time and CPUs, and a GPU each where `gpus`.
pub fn header(name: &str, tasks: usize, log: &Path, o: &SlurmOptions, gpus: bool) -> String {
    let mut s = String::from("#!/bin/bash\n");
    s.push_str(&format!("#SBATCH --job-name={name}\n"));
    s.push_str(&format!("#SBATCH --array=0-{}\n", tasks.saturating_sub(1)));
    s.push_str(&format!("#SBATCH --output={}\n", log.display()));
    s.push_str(&format!("#SBATCH --cpus-per-task={}\n", o.cpus_per_task));
    if let Some(p) = &o.partition {
        s.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    if let Some(t) = &o.time {
        s.push_str(&format!("#SBATCH --time={t}\n"));
    }
    if gpus {
        s.push_str("#SBATCH --gres=gpu:1\n");
    }
    s
}

pub fn script(plan: &Plan, plan_path: &Path, o: &SlurmOptions) -> String {
    let base = Plan::base(plan_path);
    // One array, one request: GPU shards need a GPU; CPU shards sharing the array get one too.
    let gpus = plan.shards.iter().any(|s| s.node == "gpu");
    let mut s = header(
        &format!("hspi-atlas-{}", plan.model),
        plan.shards.len(),
        &base.join("logs/shard-%a.log"),
        o,
        gpus,
    );
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
