//! Local collection: a model on every given platform, each probe answered and stored durably.

use std::path::{Path, PathBuf};

use hspi_datasets::{
    manifest::unix_now, DatasetWriter, Manifest, OpenMode, Platform, ProbeSet, SCHEMA_VERSION,
};

use super::{new_session, probe_set_info};
use crate::backend::emulated::PlanFile;
use crate::collector::{collect, PendingTarget, Progress};
use crate::error::{CollectError, Result};
use crate::target::{check_local, local_target_id, open_emulated, open_local};
use crate::zoo::Model;

#[derive(Debug, serde::Serialize)]
pub struct LocalSummary {
    pub out: PathBuf,
    pub platforms: usize,
    pub probes: usize,
    pub written: usize,
    pub already_done: usize,
}

impl std::fmt::Display for LocalSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "collected {} records ({} already present) from {} platforms × {} probes into {}",
            self.written,
            self.already_done,
            self.platforms,
            self.probes,
            self.out.display()
        )
    }
}

/// One local collection: a model, the platforms it runs at and the probes, into a dataset.
pub struct LocalCollection<'a> {
    pub model: &'a Model,
    pub platforms: &'a [Platform],
    pub probes: &'a ProbeSet,
    pub out: &'a Path,
    pub mode: OpenMode,
    /// The command line, recorded in the session.
    pub command: &'a str,
    /// GPU kernel plans: platforms with a plan are computed on this CPU from it.
    pub emulate: Option<&'a PlanFile>,
}

/// Collect `model` at every platform over `probes` into `out`. Every platform is checked before
/// anything is written; what was written is sealed even when a platform fails. Image models run
/// on one kernel thread per core (call this before starting other threads). GPU platforms with a
/// plan in `emulate` are computed on this CPU from it, labelled as the GPU platform, and the
/// session says so.
pub fn collect_local(job: LocalCollection<'_>, progress: &dyn Progress) -> Result<LocalSummary> {
    let LocalCollection {
        model,
        platforms,
        probes,
        out,
        mode,
        command,
        emulate,
    } = job;
    if matches!(model, Model::Image(_)) {
        crate::backend::prefer_single_threaded_kernels();
    }
    let info = crate::zoo::identity::of(model);
    let plan_of = |p: &Platform| emulate.and_then(|f| f.find(p));
    for p in platforms {
        match plan_of(p) {
            Some(plan) => drop(crate::backend::open_plan(model, plan)?),
            None => check_local(model, p)?,
        }
    }
    let manifest = Manifest {
        schema_version: SCHEMA_VERSION,
        created_unix: unix_now(),
        model: info.clone(),
        probe_set: probe_set_info(probes),
        platforms: platforms.to_vec(),
        sessions: Vec::new(),
    };
    let mut session = new_session(command);
    let on_gpus: Vec<Platform> = platforms
        .iter()
        .filter(|p| plan_of(p).is_none())
        .cloned()
        .collect();
    session.provenance.gpus = crate::backend::gpus_for(&on_gpus);
    session.provenance.emulation = emulate.and_then(|f| f.provenance(platforms));
    let mut writer = DatasetWriter::open(out, &manifest, probes, session, mode)?;
    let targets: Vec<PendingTarget> = platforms
        .iter()
        .map(|p| PendingTarget {
            id: local_target_id(&info.id, p),
            platform: Some(p.clone()),
            open: Box::new(move || match plan_of(p) {
                Some(plan) => open_emulated(model, plan),
                None => open_local(model, p),
            }),
        })
        .collect();
    let result = collect(&mut writer, &targets, probes, progress);
    // Seal what was written even when a target failed: nothing acknowledged is lost.
    writer.finish().map_err(CollectError::from)?;
    let done = result?;
    Ok(LocalSummary {
        out: out.to_path_buf(),
        platforms: platforms.len(),
        probes: probes.probes.len(),
        written: done.written,
        already_done: done.already_done,
    })
}
