//! Kernel plans: which kernel a GPU library ran for each GEMM shape of a model on one GPU
//! platform, recovered from that platform's records (`hspi emulate fit`), so the CPU can compute
//! the platform's answers bit for bit. A plans file holds one plan per GPU platform:
//!
//! ```json
//! {"schema": "hspi-kernel-plans/1", "plans": [{"platform": "cuda-…/tf32/bs8", "rule": "sm90",
//!   "model": "cnn-digits", "gemms": [{"m": 512, "n": 16, "k": 9, "kernel": "acc-f32.tc8.sk1.fma"}],
//!   "fit": {…}}]}
//! ```

use std::path::{Path, PathBuf};

use hspi_datasets::{Emulation, Hardware, KernelOptions, Platform};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::tensor_core::Arch;
use crate::error::{CollectError, Result};

pub const PLANS_SCHEMA: &str = "hspi-kernel-plans/1";

/// A GEMM as cuBLAS sees it: C (m × n) = A (m × k) · B (k × n).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct GemmShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl std::fmt::Display for GemmShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}×{}×{}", self.m, self.n, self.k)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedGemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// A kernel-options string with an explicit order (`acc-f32.tc8.sk2.fma`).
    pub kernel: String,
}

/// How well a plan reproduces its platform's records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitFigures {
    /// The dataset the plan was fitted to (as given).
    pub dataset: String,
    pub probes: usize,
    /// Probes whose every output value matched bit for bit.
    pub probes_matched: usize,
    pub values: usize,
    pub values_matched: usize,
    /// Largest distance in units in the last place over every value (0 when all match).
    pub max_ulp: u64,
    /// Median distance over the values that differ (0 when none does).
    pub median_ulp_of_differing: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelPlan {
    /// The GPU platform whose answers this plan reproduces.
    pub platform: Platform,
    /// The tensor-core rule its kernels follow (`sm80`, `sm90`).
    pub rule: String,
    pub model: String,
    pub gemms: Vec<PlannedGemm>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitFigures>,
}

impl KernelPlan {
    pub fn arch(&self) -> Result<Arch> {
        self.rule.parse()
    }

    /// The kernel planned for `shape`.
    pub fn kernel(&self, shape: GemmShape) -> Result<KernelOptions> {
        let g = self
            .gemms
            .iter()
            .find(|g| (g.m, g.n, g.k) == (shape.m, shape.n, shape.k))
            .ok_or_else(|| CollectError::Plan {
                path: self.platform.to_string(),
                reason: format!(
                    "no kernel planned for the GEMM {shape} (planned: {})\nhint: fit the plan \
                     over records of this batch size: hspi emulate fit",
                    self.gemms
                        .iter()
                        .map(|g| format!("{}×{}×{}", g.m, g.n, g.k))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })?;
        g.kernel.parse().map_err(|e| CollectError::Plan {
            path: self.platform.to_string(),
            reason: format!("GEMM {shape}: {e}"),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelPlans {
    pub schema: String,
    pub plans: Vec<KernelPlan>,
}

impl KernelPlans {
    pub fn new(plans: Vec<KernelPlan>) -> KernelPlans {
        KernelPlans {
            schema: PLANS_SCHEMA.into(),
            plans,
        }
    }

    /// Read and check a plans file: schema, rules, every kernel string, one plan per platform.
    pub fn load(path: &Path) -> Result<KernelPlans> {
        let bad = |reason: String| CollectError::Plan {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|source| CollectError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let plans: KernelPlans = serde_json::from_str(&text)
            .map_err(|e| bad(format!("not a kernel-plans file: {e}")))?;
        if plans.schema != PLANS_SCHEMA {
            return Err(bad(format!(
                "schema '{}', expected '{PLANS_SCHEMA}'",
                plans.schema
            )));
        }
        for (i, plan) in plans.plans.iter().enumerate() {
            if !matches!(plan.platform.hardware, Hardware::Cuda { .. }) {
                return Err(bad(format!(
                    "plan {i} reproduces {}, which is not a GPU platform",
                    plan.platform
                )));
            }
            plan.arch().map_err(|e| bad(format!("plan {i}: {e}")))?;
            for g in &plan.gemms {
                g.kernel
                    .parse::<KernelOptions>()
                    .map_err(|e| bad(format!("plan {i} ({}): {e}", plan.platform)))?;
            }
            if plans.plans[..i].iter().any(|p| p.platform == plan.platform) {
                return Err(bad(format!("two plans for {}", plan.platform)));
            }
        }
        Ok(plans)
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("plans serialise");
        std::fs::write(path, text + "\n").map_err(|source| CollectError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    pub fn find(&self, platform: &Platform) -> Option<&KernelPlan> {
        self.plans.iter().find(|p| &p.platform == platform)
    }

    /// sha256 of the file at `path`, for provenance.
    pub fn file_sha256(path: &Path) -> Result<String> {
        let bytes = std::fs::read(path).map_err(|source| CollectError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(hex::encode(Sha256::digest(bytes)))
    }
}

/// A plans file as loaded for a collection: the plans, and what a session records of them.
#[derive(Debug, Clone)]
pub struct PlanFile {
    pub path: PathBuf,
    pub plans: KernelPlans,
    pub sha256: String,
}

impl PlanFile {
    pub fn load(path: &Path) -> Result<PlanFile> {
        Ok(PlanFile {
            path: path.to_path_buf(),
            plans: KernelPlans::load(path)?,
            sha256: KernelPlans::file_sha256(path)?,
        })
    }

    /// The plan for `platform`, if the file has one.
    pub fn find(&self, platform: &Platform) -> Option<&KernelPlan> {
        self.plans.find(platform)
    }

    /// The provenance of a session that computed `platforms` from these plans (None if none).
    pub fn provenance(&self, platforms: &[Platform]) -> Option<Emulation> {
        let used: Vec<&KernelPlan> = platforms.iter().filter_map(|p| self.find(p)).collect();
        if used.is_empty() {
            return None;
        }
        let mut rules: Vec<String> = used.iter().map(|p| p.rule.clone()).collect();
        rules.sort();
        rules.dedup();
        Some(Emulation {
            kernel_plans: self.path.display().to_string(),
            sha256: self.sha256.clone(),
            rules,
            platforms: used.iter().map(|p| p.platform.clone()).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> KernelPlan {
        KernelPlan {
            platform: "cuda-nvidia-h100-80gb-hbm3-sm90-132sm/cublas-13.1.0/tf32/bs1"
                .parse()
                .unwrap(),
            rule: "sm90".into(),
            model: "cnn-digits".into(),
            gemms: vec![PlannedGemm {
                m: 64,
                n: 16,
                k: 9,
                kernel: "acc-f32.tc8.sk1.fma".into(),
            }],
            fit: None,
        }
    }

    #[test]
    fn a_plan_names_its_kernels_and_refuses_unplanned_shapes() {
        let p = plan();
        let shape = GemmShape { m: 64, n: 16, k: 9 };
        assert_eq!(p.kernel(shape).unwrap().to_string(), "acc-f32.tc8.sk1.fma");
        let e = p
            .kernel(GemmShape { m: 8, ..shape })
            .unwrap_err()
            .to_string();
        assert!(e.contains("no kernel planned for the GEMM 8×16×9"), "{e}");
        assert!(e.contains("planned: 64×16×9"), "{e}");
    }

    #[test]
    fn files_round_trip_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plans.json");
        KernelPlans::new(vec![plan()]).save(&path).unwrap();
        assert_eq!(KernelPlans::load(&path).unwrap().plans[0], plan());

        let mut bad = plan();
        bad.gemms[0].kernel = "acc-f32.tc8".into();
        KernelPlans::new(vec![bad]).save(&path).unwrap();
        let e = KernelPlans::load(&path).unwrap_err().to_string();
        assert!(e.contains("plans.json") && e.contains("plan 0"), "{e}");

        let mut cpu = plan();
        cpu.platform = "cpu-avx2/emu/f32/bs1".parse().unwrap();
        KernelPlans::new(vec![cpu]).save(&path).unwrap();
        let e = KernelPlans::load(&path).unwrap_err().to_string();
        assert!(e.contains("not a GPU platform"), "{e}");

        let mut rule = plan();
        rule.rule = "sm70".into();
        KernelPlans::new(vec![rule]).save(&path).unwrap();
        let e = KernelPlans::load(&path).unwrap_err().to_string();
        assert!(e.contains("unknown tensor-core rule 'sm70'"), "{e}");

        std::fs::write(&path, "{\"schema\": \"x\", \"plans\": []}").unwrap();
        let e = KernelPlans::load(&path).unwrap_err().to_string();
        assert!(e.contains("expected 'hspi-kernel-plans/1'"), "{e}");
    }
}
