//! A Kubernetes Indexed Job for a plan: one pod per shard (`JOB_COMPLETION_INDEX`), the plan's
//! directory mounted from a shared volume claim.

use std::path::Path;

use super::Plan;
use crate::error::CollectError;

pub struct K8sOptions {
    pub image: String,
    pub claim: String,
    /// Where the claim is mounted in the pod; the plan must lie under it.
    pub mount: String,
}

/// The Job manifest; refuses a plan outside the mount, which the pods would not see.
pub fn manifest(plan: &Plan, plan_path: &Path, o: &K8sOptions) -> Result<String, CollectError> {
    if !plan_path.starts_with(&o.mount) {
        return Err(CollectError::Plan {
            path: plan_path.display().to_string(),
            reason: format!("does not lie under the mount {}: pods would not see it\nhint: pass the plan's path as the pods see it, e.g. {}/plan.json", o.mount, o.mount),
        });
    }
    let n = plan.shards.len();
    let gpus = plan.shards.iter().any(|s| s.node == "gpu");
    let name = format!("hspi-atlas-{}", plan.model.replace(['_', '.'], "-"));
    let mut s = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n  completionMode: Indexed\n  completions: {n}\n  parallelism: {n}\n  backoffLimitPerIndex: 2\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: collect\n        image: {image}\n        command: [\"hspi\", \"collect\", \"--plan\", \"{plan}\"]\n",
        image = o.image,
        plan = plan_path.display()
    );
    if gpus {
        s.push_str("        resources:\n          limits:\n            nvidia.com/gpu: 1\n");
    }
    s.push_str(&format!(
        "        volumeMounts:\n        - name: atlas\n          mountPath: {}\n      volumes:\n      - name: atlas\n        persistentVolumeClaim:\n          claimName: {}\n",
        o.mount, o.claim
    ));
    Ok(s)
}
