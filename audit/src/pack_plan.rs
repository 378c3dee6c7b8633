//! A pack build split for the scheduler a cluster already has: `hspi pack plan` writes the jobs
//! `pack build` would run one after another (one per platform: a llama.cpp format, a scheme of
//! hspi's own engine, a trusted endpoint) and the pool where every node reads them; `hspi pack
//! slurm` writes an `sbatch` array with one task per job; each task runs `hspi pack job PLAN
//! --index I`, starting its own engine and collecting its platform's references into
//! `shards/job-NNN/`; `hspi pack assemble` checks every shard and seals the pack exactly as `pack
//! build` does (the same classifier, the same references record for record).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use hspi_collect::atlas::slurm::{self, SlurmOptions};
use hspi_datasets::ProbeSet;
use hspi_pack::{copy_tree, Pack, POOL, REFERENCES, REPEATS};

use crate::error::AuditError;
use crate::pack_build::{
    build_weights, empty_out, needs_weights, pack_jobs, run_job, seal_built, BuiltPack, JobContext,
    PackBuild, PackJob, Weights,
};
use crate::Lines;

/// The plan's file name in its directory.
pub const PLAN_FILE: &str = "plan.json";
/// The shards' directory beside the plan.
const SHARDS: &str = "shards";
/// A finished shard's record of what it collected: written last, so a shard without it is
/// incomplete.
const DONE: &str = "done.json";
const PLAN_SCHEMA: u32 = 1;

/// What every job of a pack build needs, as every node reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackPlan {
    pub schema: u32,
    pub model: String,
    pub aliases: Vec<String>,
    /// The weights local formats are made from (a path every node sees), and their sha256.
    pub gguf: Option<PathBuf>,
    pub weights_sha256: Option<String>,
    pub llama_bin: Option<PathBuf>,
    /// The environment variable holding the trusted endpoints' key on the nodes (the key itself
    /// is never written).
    pub api_key_env: Option<String>,
    /// The pool's hash (`pool.json` beside the plan).
    pub pool_hash: String,
    pub jobs: Vec<PackJob>,
    /// How long an engine a job starts may take to answer, in seconds.
    #[serde(default)]
    pub engine_wait_s: u64,
    /// The command that planned it.
    pub command: String,
}

/// A finished job's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Done {
    platform: String,
    source: String,
}

/// Write `out/plan.json`, `out/pool.json` and `out/logs/` for the build `b`; the plan's path and
/// a summary.
pub fn plan_pack(
    b: &PackBuild,
    api_key_env: Option<&str>,
    out: &Path,
) -> Result<(PathBuf, String), AuditError> {
    let gguf = build_weights(b)?;
    let jobs = pack_jobs(b)?;
    needs_weights(&jobs, gguf.as_deref())?;
    empty_out(out, b.force)?;
    let gguf = gguf
        .map(|g| std::path::absolute(&g).map_err(AuditError::io(&g)))
        .transpose()?;
    let weights_sha256 = gguf
        .as_deref()
        .map(hspi_collect::zoo::sha256_file)
        .transpose()?;
    hspi_probe::write_probe_set(&out.join(POOL), &b.pool)?;
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).map_err(AuditError::io(&logs))?;
    let plan = PackPlan {
        schema: PLAN_SCHEMA,
        model: b.model.clone(),
        aliases: b.aliases.clone(),
        gguf,
        weights_sha256,
        llama_bin: b.llama_bin.clone(),
        api_key_env: api_key_env.map(String::from),
        pool_hash: b.pool.hash(),
        jobs,
        engine_wait_s: b.started.1.as_secs(),
        command: b.command.to_string(),
    };
    let path = out.join(PLAN_FILE);
    let text = serde_json::to_string_pretty(&plan).expect("a plan serialises");
    std::fs::write(&path, text).map_err(AuditError::io(&path))?;
    let list: Vec<String> = plan.jobs.iter().map(ToString::to_string).collect();
    let summary = format!(
        "plan: a pack of {} over {} pool prompts in {} jobs ({})",
        plan.model,
        b.pool.probes.len(),
        plan.jobs.len(),
        list.join("; ")
    );
    Ok((path, summary))
}

/// The plan at `path` and its pool, checked against each other.
pub fn read_plan(path: &Path) -> Result<(PackPlan, ProbeSet), AuditError> {
    let bad = |reason: String| AuditError::BadPackPlan {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(AuditError::io(path))?;
    let plan: PackPlan = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if plan.schema != PLAN_SCHEMA {
        return Err(bad(format!(
            "schema {} (this hspi reads {PLAN_SCHEMA})",
            plan.schema
        )));
    }
    let pool = hspi_probe::read_probe_set(&base(path).join(POOL))?;
    if pool.hash() != plan.pool_hash {
        return Err(bad(format!(
            "{} is not the pool it was planned with (hash {}, the plan's {})",
            base(path).join(POOL).display(),
            pool.hash(),
            plan.pool_hash
        )));
    }
    Ok((plan, pool))
}

/// The directory a plan lives in.
fn base(plan: &Path) -> PathBuf {
    plan.parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn shard_dir(plan: &Path, index: usize) -> PathBuf {
    base(plan).join(SHARDS).join(format!("job-{index:03}"))
}

/// Refused where the weights' digest `sha` is not the one the plan was made with.
fn check_planned(path: &Path, plan: &PackPlan, sha: Option<&str>) -> Result<(), AuditError> {
    match (plan.gguf.as_deref(), sha, plan.weights_sha256.as_deref()) {
        (Some(gguf), Some(sha), Some(planned)) if sha != planned => Err(AuditError::BadPackPlan {
            path: path.display().to_string(),
            reason: format!(
                "{} changed since it was planned (sha256 {}, the plan's {})",
                gguf.display(),
                hspi_datasets::short_id(sha),
                hspi_datasets::short_id(planned)
            ),
        }),
        _ => Ok(()),
    }
}

/// The weights a plan names, with their tokenizer, checked to be the ones it was planned with.
fn plan_weights(path: &Path, plan: &PackPlan) -> Result<Weights, AuditError> {
    let weights = Weights::of(plan.gguf.as_deref())?;
    check_planned(path, plan, weights.pair().map(|(_, sha)| sha))?;
    Ok(weights)
}

/// Run job `index` of the plan at `path` into its shard (a shard left unfinished by an earlier
/// try is made again; a finished one is kept); a summary.
pub fn run_pack_job(path: &Path, index: usize, lines: &Lines) -> Result<String, AuditError> {
    let (plan, pool) = read_plan(path)?;
    let job = plan
        .jobs
        .get(index)
        .ok_or_else(|| AuditError::BadPackPlan {
            path: path.display().to_string(),
            reason: format!("no job {index} (it has {})", plan.jobs.len()),
        })?;
    let dir = shard_dir(path, index);
    if dir.join(DONE).exists() {
        return Ok(format!(
            "job {index} ({job}) was finished already: {}",
            dir.display()
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(AuditError::io(&dir))?;
    // The digest alone: a job needs no tokenizer.
    let sha = plan
        .gguf
        .as_deref()
        .map(hspi_collect::zoo::sha256_file)
        .transpose()?;
    check_planned(path, &plan, sha.as_deref())?;
    let api_key = hspi_collect::session::api_key_from_env(plan.api_key_env.as_deref())?;
    let command = format!("{} (job {index})", plan.command);
    let ctx = JobContext {
        model: &plan.model,
        gguf: plan.gguf.as_deref().zip(sha.as_deref()),
        llama_bin: plan.llama_bin.as_deref(),
        api_key: api_key.as_deref(),
        pool: &pool,
        command: &command,
        engine_wait: std::time::Duration::from_secs(plan.engine_wait_s),
    };
    let (platform, source) = run_job(&ctx, job, &dir, lines)?;
    let done = Done { platform, source };
    let file = dir.join(DONE);
    let text = serde_json::to_string_pretty(&done).expect("a record serialises");
    std::fs::write(&file, text).map_err(AuditError::io(&file))?;
    Ok(format!(
        "job {index} ({job}): {} collected into {}",
        done.platform,
        dir.display()
    ))
}

/// Seal the pack of the plan at `path` in `out` from its finished shards, in job order.
pub fn assemble_pack(
    path: &Path,
    out: &Path,
    force: bool,
    command: &str,
    lines: &Lines,
) -> Result<Pack, AuditError> {
    let (plan, pool) = read_plan(path)?;
    let weights = plan_weights(path, &plan)?;
    let mut done = Vec::new();
    let mut missing = Vec::new();
    for (i, job) in plan.jobs.iter().enumerate() {
        let file = shard_dir(path, i).join(DONE);
        match std::fs::read_to_string(&file) {
            Ok(text) => {
                let d: Done = serde_json::from_str(&text).map_err(|e| AuditError::BadPackPlan {
                    path: file.display().to_string(),
                    reason: e.to_string(),
                })?;
                done.push(d);
            }
            Err(_) => missing.push(format!("job {i} ({job})")),
        }
    }
    if !missing.is_empty() {
        return Err(AuditError::PackJobsUnfinished {
            plan: path.display().to_string(),
            jobs: missing.join(", "),
            hspi: "hspi pack job PLAN --index I".into(),
        });
    }
    empty_out(out, force)?;
    hspi_probe::write_probe_set(&out.join(POOL), &pool)?;
    let mut sources = BTreeMap::new();
    for (i, d) in done.into_iter().enumerate() {
        for sub in [REFERENCES, REPEATS] {
            let from = shard_dir(path, i).join(sub);
            if from.exists() {
                copy_tree(&from, &out.join(sub), &|_| false)?;
            }
        }
        if sources.insert(d.platform.clone(), d.source).is_some() {
            return Err(AuditError::BadPackPlan {
                path: path.display().to_string(),
                reason: format!("two jobs collected {}", d.platform),
            });
        }
    }
    let spec = BuiltPack {
        model: &plan.model,
        aliases: &plan.aliases,
        weights: &weights,
        jobs: &plan.jobs,
        pool: &pool,
        provenance: vec![plan.command.clone(), command.to_string()],
    };
    seal_built(out, &spec, &sources, lines)
}

/// An `sbatch` array for the plan at `path`: one task per job, logs beside the plan; a GPU per
/// task where `gpus` (an engine the task starts on it).
pub fn pack_slurm_script(path: &Path, o: &SlurmOptions, gpus: bool) -> Result<String, AuditError> {
    let (plan, _) = read_plan(path)?;
    let path = std::path::absolute(path).map_err(AuditError::io(path))?;
    let mut s = slurm::header(
        &format!("hspi-pack-{}", plan.model),
        plan.jobs.len(),
        &base(&path).join("logs/job-%a.log"),
        o,
        gpus,
    );
    for (i, job) in plan.jobs.iter().enumerate() {
        s.push_str(&format!("# job {i}: {job}\n"));
    }
    s.push_str("set -euo pipefail\n");
    s.push_str(&format!(
        "exec \"{}\" pack job \"{}\" --index \"$SLURM_ARRAY_TASK_ID\"\n",
        o.hspi,
        path.display()
    ));
    Ok(s)
}
