//! GPU platforms reproduced on the CPU: fit kernel plans to a GPU dataset's records
//! (`hspi emulate fit`), and measure how much of a dataset a plans file reproduces bit for bit
//! (`hspi emulate check`).

use std::collections::HashMap;
use std::path::Path;

use hspi_collect::backend::emulated::{
    fit::{arch_of, figures, fit, FitTask},
    FitFigures, GpuModel, KernelPlan, KernelPlans, KernelSource,
};
use hspi_collect::zoo::{recorded_image_model, ImageModel};
use hspi_datasets::{Dataset, Hardware, Outputs, Platform, ProbeInput};
use serde::Serialize;

use crate::error::AuditError;

/// One GPU platform's outputs per input (None where it answered no record).
type PlatformOutputs = (Platform, Vec<Option<Vec<f32>>>);

/// A GPU dataset's image model, its inputs in probe-set order, and every platform's outputs.
struct GpuRecords {
    model: ImageModel,
    inputs: Vec<Vec<f32>>,
    platforms: Vec<PlatformOutputs>,
}

fn read(dir: &Path, weights: Option<&Path>) -> Result<GpuRecords, AuditError> {
    let dataset = Dataset::open(dir)?;
    let manifest = &dataset.manifest;
    let model = recorded_image_model(&dir.display().to_string(), &manifest.model, weights)?;
    let probes = dataset.probe_set()?;
    let mut ids = Vec::new();
    let mut inputs = Vec::new();
    for p in &probes.probes {
        if let ProbeInput::Image { pixels, .. } = &p.input {
            ids.push(p.id.clone());
            inputs.push(pixels.clone());
        }
    }
    let mut outputs: HashMap<(Platform, String), Vec<f32>> = HashMap::new();
    for r in dataset.records()? {
        if let (Some(p), Outputs::Logits { values }) = (r.platform, &r.outputs) {
            outputs.insert((p, r.probe_id), values.to_f32());
        }
    }
    let platforms = manifest
        .platforms
        .iter()
        .filter(|p| matches!(p.hardware, Hardware::Cuda { .. }))
        .map(|p| {
            let of = |id: &String| outputs.remove(&(p.clone(), id.clone()));
            (p.clone(), ids.iter().map(of).collect())
        })
        .collect();
    Ok(GpuRecords {
        model,
        inputs,
        platforms,
    })
}

/// Inputs and outputs of one platform, complete: the collector formed batches over the probe
/// set in order, so a missing record would shift every later batch.
fn complete(
    r: &GpuRecords,
    platform: &Platform,
    outputs: &[Option<Vec<f32>>],
    dir: &Path,
) -> Result<Vec<Vec<f32>>, AuditError> {
    let missing = outputs.iter().filter(|o| o.is_none()).count();
    if missing > 0 {
        return Err(AuditError::AnswersWithGaps {
            dir: dir.display().to_string(),
            platform: platform.to_string(),
            answered: r.inputs.len() - missing,
            of: r.inputs.len(),
        });
    }
    Ok(outputs.iter().flatten().cloned().collect())
}

fn selected<'r>(
    r: &'r GpuRecords,
    only: &[Platform],
    dir: &Path,
) -> Result<Vec<&'r PlatformOutputs>, AuditError> {
    for p in only {
        if !r.platforms.iter().any(|(q, _)| q == p) {
            return Err(AuditError::NoSuchGpuPlatform {
                dir: dir.display().to_string(),
                platform: p.to_string(),
                holds: r
                    .platforms
                    .iter()
                    .map(|(q, _)| q.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    Ok(r.platforms
        .iter()
        .filter(|(p, _)| only.is_empty() || only.contains(p))
        .collect())
}

/// Fit one plan per GPU platform of `answers` (or those in `only`), each reported as it is done.
pub fn fit_plans(
    answers: &Path,
    only: &[Platform],
    weights: Option<&Path>,
    passes: usize,
    done: &mut dyn FnMut(&KernelPlan),
) -> Result<KernelPlans, AuditError> {
    let r = read(answers, weights)?;
    let mut plans = Vec::new();
    for (platform, outputs) in selected(&r, only, answers)? {
        let expected = complete(&r, platform, outputs, answers)?;
        let plan = fit(&FitTask {
            model: &r.model,
            platform,
            arch: arch_of(platform)?,
            inputs: r.inputs.clone(),
            expected,
            dataset: answers.display().to_string(),
            passes,
            fitted: &plans,
        })?;
        done(&plan);
        plans.push(plan);
    }
    Ok(KernelPlans::new(plans))
}

/// One line on a fitted plan, as `hspi emulate fit` reports each.
pub fn fitted_line(plan: &KernelPlan) -> String {
    match &plan.fit {
        Some(f) => format!(
            "{}: {}/{} probes reproduced bit for bit",
            plan.platform, f.probes_matched, f.probes
        ),
        None => plan.platform.to_string(),
    }
}

/// One plan checked against a dataset's records.
#[derive(Debug, Clone, Serialize)]
pub struct PlanCheck {
    pub platform: Platform,
    pub rule: String,
    pub figures: FitFigures,
    /// The planned kernel of every GEMM shape, as `m×n×k kernel`.
    pub kernels: Vec<String>,
}

impl PlanCheck {
    pub fn share(&self) -> f64 {
        self.figures.probes_matched as f64 / self.figures.probes.max(1) as f64
    }
}

/// Recompute every plan's platform over `answers`' probes on this CPU, batch by batch as the
/// collector ran them, and compare bit for bit with the records.
pub fn check_plans(
    plans_file: &Path,
    answers: &Path,
    weights: Option<&Path>,
) -> Result<Vec<PlanCheck>, AuditError> {
    let plans = KernelPlans::load(plans_file)?;
    let r = read(answers, weights)?;
    let mut out = Vec::new();
    for (platform, outputs) in &r.platforms {
        let Some(plan) = plans.find(platform) else {
            continue;
        };
        let expected = complete(&r, platform, outputs, answers)?;
        let gpu = GpuModel::new(plan.arch()?, platform.format, &r.model)?;
        let source = KernelSource::Plan(Box::new(plan.clone()));
        let mut got = Vec::new();
        for batch in r.inputs.chunks((platform.batch_size as usize).max(1)) {
            let images: Vec<&[f32]> = batch.iter().map(Vec::as_slice).collect();
            got.extend(gpu.forward(&source, &images)?);
        }
        out.push(PlanCheck {
            platform: platform.clone(),
            rule: plan.rule.clone(),
            figures: figures(&got, &expected, &answers.display().to_string()),
            kernels: plan
                .gemms
                .iter()
                .map(|g| format!("{}×{}×{} {}", g.m, g.n, g.k, g.kernel))
                .collect(),
        });
    }
    if out.is_empty() {
        return Err(AuditError::NoPlans {
            plans: plans_file.display().to_string(),
            answers: answers.display().to_string(),
        });
    }
    Ok(out)
}

/// The checks as a table: one row per platform.
pub fn checks_text(checks: &[PlanCheck]) -> String {
    let mut s = String::from(
        "platform                                                             rule  probes matched  share    values matched  max ulp  median ulp (differing; ulps of f32)\n",
    );
    for c in checks {
        let f = &c.figures;
        s.push_str(&format!(
            "{:<68} {:<5} {:>7}/{:<6} {:>6.1} %  {:>7}/{:<7} {:>8}  {:>8}\n",
            c.platform.to_string(),
            c.rule,
            f.probes_matched,
            f.probes,
            100.0 * c.share(),
            f.values_matched,
            f.values,
            f.max_ulp,
            f.median_ulp_of_differing
        ));
    }
    s
}
