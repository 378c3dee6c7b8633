//! The plan: which shard collects which platforms of one model over one probe set, on which
//! kind of node, into which directory (relative to the plan, on the shared filesystem).

use std::path::{Path, PathBuf};

use hspi_datasets::{Hardware, Platform, ProbeSet};
use serde::{Deserialize, Serialize};

use crate::error::CollectError;

pub const SCHEMA: &str = "hspi-atlas-plan/1";
pub const PROBES_FILE: &str = "probes.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    /// `cpu` or `gpu`: the node type the shard needs.
    pub node: String,
    pub platforms: Vec<String>,
    /// Dataset directory, relative to the plan's directory.
    pub out: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub schema: String,
    pub model: String,
    /// The probe set file, relative to the plan's directory.
    pub probes: String,
    pub probe_set_hash: String,
    pub shards: Vec<Shard>,
}

fn plan_error(path: &Path, reason: impl Into<String>) -> CollectError {
    CollectError::Plan {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

fn node_of(p: &Platform) -> &'static str {
    match p.hardware {
        Hardware::Cuda { .. } => "gpu",
        _ => "cpu",
    }
}

impl Plan {
    /// Spread platforms over `shards` shards, each node type on its own shards, round robin.
    pub fn new(
        model: &str,
        probes: &ProbeSet,
        platforms: &[Platform],
        shards: usize,
    ) -> Result<Plan, CollectError> {
        let here = Path::new("plan");
        if shards == 0 {
            return Err(plan_error(here, "--shards must be at least 1"));
        }
        if platforms.len() < shards {
            return Err(plan_error(
                here,
                format!("{} platforms cannot fill {shards} shards", platforms.len()),
            ));
        }
        let gpu: Vec<&Platform> = platforms.iter().filter(|p| node_of(p) == "gpu").collect();
        let cpu: Vec<&Platform> = platforms.iter().filter(|p| node_of(p) == "cpu").collect();
        // GPU shards in proportion to GPU platforms, at least one when there are any.
        let gpu_shards = if gpu.is_empty() {
            0
        } else {
            ((shards * gpu.len()).div_ceil(platforms.len()))
                .clamp(1, shards - usize::from(!cpu.is_empty()))
        };
        let mut out = Vec::new();
        for (node, list, n) in [
            ("cpu", &cpu, shards - gpu_shards),
            ("gpu", &gpu, gpu_shards),
        ] {
            for k in 0..n {
                let index = out.len();
                out.push(Shard {
                    index,
                    node: node.into(),
                    platforms: list
                        .iter()
                        .skip(k)
                        .step_by(n)
                        .map(|p| p.to_string())
                        .collect(),
                    out: format!("shards/shard-{index:03}"),
                });
            }
        }
        Ok(Plan {
            schema: SCHEMA.into(),
            model: model.into(),
            probes: PROBES_FILE.into(),
            probe_set_hash: probes.hash(),
            shards: out,
        })
    }

    pub fn read(path: &Path) -> Result<Plan, CollectError> {
        let text = std::fs::read_to_string(path).map_err(|e| plan_error(path, e.to_string()))?;
        let plan: Plan = serde_json::from_str(&text)
            .map_err(|e| plan_error(path, format!("malformed plan ({e})")))?;
        if plan.schema != SCHEMA {
            return Err(plan_error(
                path,
                format!("schema '{}' is not {SCHEMA}", plan.schema),
            ));
        }
        Ok(plan)
    }

    pub fn write(&self, path: &Path) -> Result<(), CollectError> {
        let text = serde_json::to_string_pretty(self).expect("plans serialise");
        std::fs::write(path, text).map_err(|e| plan_error(path, e.to_string()))
    }

    pub fn shard(&self, path: &Path, index: usize) -> Result<&Shard, CollectError> {
        self.shards.get(index).ok_or_else(|| {
            plan_error(
                path,
                format!(
                    "shard {index} is out of range: the plan has {} shards (0-{})",
                    self.shards.len(),
                    self.shards.len().saturating_sub(1)
                ),
            )
        })
    }

    /// The directory every relative path of the plan hangs from.
    pub fn base(path: &Path) -> PathBuf {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_platform_lands_in_exactly_one_shard_and_gpus_apart() {
        let platforms: Vec<Platform> = [
            "cpu-avx2/candle-0.11.1/f32/bs1",
            "cpu-avx2/candle-0.11.1/f16/bs1",
            "cpu-avx2/candle-0.11.1/bf16/bs1",
            "cuda-h100-sxm-sm90-132sm/cublas-12.6/f16/bs1",
        ]
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
        let probes = ProbeSet {
            probes: Vec::new(),
            generator: "t".into(),
            seed: 0,
        };
        let plan = Plan::new("cnn-digits", &probes, &platforms, 3).unwrap();
        let mut all: Vec<String> = plan
            .shards
            .iter()
            .flat_map(|s| s.platforms.clone())
            .collect();
        all.sort();
        let mut want: Vec<String> = platforms.iter().map(ToString::to_string).collect();
        want.sort();
        assert_eq!(all, want);
        assert_eq!(plan.shards.iter().filter(|s| s.node == "gpu").count(), 1);
        assert!(plan.shards.iter().all(|s| !s.platforms.is_empty()));
        let e = plan.shard(Path::new("p.json"), 7).unwrap_err().to_string();
        assert!(
            e.contains("shard 7 is out of range: the plan has 3 shards (0-2)"),
            "{e}"
        );
    }
}
