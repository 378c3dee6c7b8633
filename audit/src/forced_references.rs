//! References for answers collected before or elsewhere (`hspi dataset references`): hspi's
//! formats teacher-forced on each answer's own tokens, as a fresh audit computes them while it
//! asks — so that an auditor can compute them later, on another machine, or one format per job
//! of a cluster's array, and weigh the answers with `hspi verify ANSWERS --references REFS…`.

use std::path::Path;

use hspi_collect::atlas::slurm::{self, SlurmOptions};
use hspi_collect::residency::Residency;
use hspi_collect::session::ForcedSession;
use hspi_collect::teacher_forced::{ForcedEngines, ReferenceEngine};
use hspi_datasets::{Dataset, NumericFormat, OpenMode};

use crate::error::AuditError;

/// What to compute: the answers, the model's weights, the formats, and where the references go.
pub struct ForcedReferences<'a> {
    pub answers: &'a Path,
    pub weights: &'a Path,
    pub formats: Vec<NumericFormat>,
    /// Engines the user runs computing references too (`audit --reference-server`, …).
    pub servers: Vec<ReferenceEngine>,
    pub out: &'a Path,
    pub mode: OpenMode,
    pub residency: Residency,
    /// The command line, recorded as the references' provenance.
    pub command: &'a str,
}

/// The references, written as each answer's come (an interrupted run keeps those it made);
/// returns how many records were written.
pub fn forced_references(job: ForcedReferences) -> Result<usize, AuditError> {
    let answers = Dataset::open(job.answers)?;
    let probes = answers.probe_set()?;
    let info = hspi_collect::Model::language_model(&answers.manifest.model.id, job.weights)?.info();
    let engines = ForcedEngines {
        weights: job.weights.to_path_buf(),
        formats: job.formats,
        servers: job.servers,
        residency: job.residency,
    };
    let mut forced = ForcedSession::open(engines, info, &probes, job.out, job.mode, job.command)?;
    let mut written = 0;
    for r in answers.records()? {
        written += forced.references(&r)?.len();
    }
    forced.finish()?;
    Ok(written)
}

/// An sbatch array computing the references of `answers` one format per task, each into
/// `out/FORMAT` (`logs/` beside them, which the caller makes): the same command on a cluster's
/// nodes, its results weighed together with `hspi verify ANSWERS --references out/*`.
pub fn references_slurm_script(
    answers: &Path,
    weights: &Path,
    formats: &[NumericFormat],
    out: &Path,
    o: &SlurmOptions,
    gpus: bool,
) -> Result<String, AuditError> {
    let absolute = |p: &Path| std::path::absolute(p).map_err(AuditError::io(p));
    let (answers, weights, out) = (absolute(answers)?, absolute(weights)?, absolute(out)?);
    let mut s = slurm::header(
        "hspi-references",
        formats.len(),
        &out.join("logs/references-%a.log"),
        o,
        gpus,
    );
    let names: Vec<String> = formats.iter().map(ToString::to_string).collect();
    for (i, f) in names.iter().enumerate() {
        s.push_str(&format!("# task {i}: {f}\n"));
    }
    s.push_str("set -euo pipefail\n");
    s.push_str(&format!("formats=({})\n", names.join(" ")));
    s.push_str("format=${formats[$SLURM_ARRAY_TASK_ID]}\n");
    s.push_str(&format!(
        "exec \"{}\" dataset references \"{}\" --weights \"{}\" --formats \"$format\" --out \"{}/$format\" --force\n",
        o.hspi,
        answers.display(),
        weights.display(),
        out.display()
    ));
    Ok(s)
}
