//! References for answers collected before or elsewhere (`hspi dataset references`): hspi's
//! formats teacher-forced on each answer's own tokens, as a fresh audit computes them while it
//! asks — so that an auditor can compute them later, on another machine, or one format per job
//! of a cluster's array, and weigh the answers with `hspi verify ANSWERS --references REFS…`.

use std::path::Path;

use hspi_collect::atlas::slurm::{self, SlurmOptions};
use hspi_collect::residency::Residency;
use hspi_collect::session::ForcedSession;
use hspi_collect::started_engine::{EngineCommand, StartedEngine};
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
    /// Engines started here for this run (`--engine`), stopped when the references are written.
    pub started: StartedEngines,
    pub out: &'a Path,
    pub mode: OpenMode,
    pub residency: Residency,
    /// The command line, recorded as the references' provenance.
    pub command: &'a str,
}

/// The references, written as each answer's come (an interrupted run keeps those it made);
/// returns how many records were written.
pub fn forced_references(mut job: ForcedReferences) -> Result<usize, AuditError> {
    // Held until the references are written: dropping one stops its engine.
    let mut running = Vec::with_capacity(job.started.engines.len());
    for e in &job.started.engines {
        let engine = StartedEngine::start(e, job.started.wait)?;
        job.servers.push(job.started.api.reference(&engine)?);
        running.push(engine);
    }
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

/// How an engine hspi started is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineApi {
    /// Completions with prompt logprobs, one request per answer (vLLM's; `--reference-endpoint`).
    Completions,
    /// llama-server, asked position by position (`--reference-server`).
    LlamaServer,
}

impl EngineApi {
    /// Its `--engine-api` word.
    fn word(self) -> &'static str {
        match self {
            EngineApi::Completions => "completions",
            EngineApi::LlamaServer => "llama-server",
        }
    }

    /// The started `engine` as a reference engine of its platform.
    fn reference(self, engine: &StartedEngine) -> Result<ReferenceEngine, AuditError> {
        let spec = format!("{}={}", engine.url, engine.platform);
        Ok(match self {
            EngineApi::Completions => ReferenceEngine::endpoint(&spec, None)?,
            EngineApi::LlamaServer => ReferenceEngine::llama_server(&spec)?,
        })
    }
}

/// Engines hspi starts for a run (one task each in an array), how they are asked and how long
/// each may take to load.
pub struct StartedEngines {
    pub engines: Vec<EngineCommand>,
    pub api: EngineApi,
    pub wait: std::time::Duration,
}

/// A word as one shell word, single-quoted.
fn shell_word(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// An sbatch array computing the references of `answers`: one task per format of hspi's, each
/// into `out/FORMAT`, then one task per engine the user names, each starting that engine,
/// computing its references into `out/PLATFORM-SLUG` and stopping it (`dataset references
/// --engine`; `logs/` beside them, which the caller makes): the same command on a cluster's nodes, its
/// results weighed together with `hspi verify ANSWERS --references out/*`.
pub fn references_slurm_script(
    answers: &Path,
    weights: &Path,
    formats: &[NumericFormat],
    engines: &StartedEngines,
    out: &Path,
    o: &SlurmOptions,
    gpus: bool,
) -> Result<String, AuditError> {
    let absolute = |p: &Path| std::path::absolute(p).map_err(AuditError::io(p));
    let (answers, weights, out) = (absolute(answers)?, absolute(weights)?, absolute(out)?);
    let tasks = formats.len() + engines.engines.len();
    if tasks == 0 {
        return Err(AuditError::NoReferenceTasks);
    }
    let mut s = slurm::header(
        "hspi-references",
        tasks,
        &out.join("logs/references-%a.log"),
        o,
        gpus,
    );
    let names: Vec<String> = formats.iter().map(ToString::to_string).collect();
    for (i, f) in names.iter().enumerate() {
        s.push_str(&format!("# task {i}: {f}\n"));
    }
    for (i, e) in engines.engines.iter().enumerate() {
        s.push_str(&format!(
            "# task {}: {}, served by the task itself: {}\n",
            names.len() + i,
            e.platform,
            e.command
        ));
    }
    s.push_str("set -euo pipefail\n");
    s.push_str(&format!("formats=({})\n", names.join(" ")));
    let engine_words: Vec<String> = engines
        .engines
        .iter()
        .map(|e| shell_word(&e.to_string()))
        .collect();
    s.push_str(&format!("engines=({})\n", engine_words.join(" ")));
    let slugs: Vec<String> = engines
        .engines
        .iter()
        .map(|e| shell_word(&e.platform.slug()))
        .collect();
    s.push_str(&format!("slugs=({})\n", slugs.join(" ")));
    let references = format!(
        "\"{}\" dataset references \"{}\" --weights \"{}\"",
        o.hspi,
        answers.display(),
        weights.display()
    );
    s.push_str("task=$SLURM_ARRAY_TASK_ID\n");
    s.push_str("if [ \"$task\" -lt ${#formats[@]} ]; then\n");
    s.push_str("  format=${formats[$task]}\n");
    s.push_str(&format!(
        "  exec {references} --formats \"$format\" --out \"{}/$format\" --force\n",
        out.display()
    ));
    s.push_str("fi\n");
    s.push_str("e=$((task - ${#formats[@]}))\n");
    s.push_str(&format!(
        "exec {references} --engine \"${{engines[$e]}}\" --engine-api {} --engine-wait {} --out \"{}/${{slugs[$e]}}\" --force\n",
        engines.api.word(),
        engines.wait.as_secs(),
        out.display()
    ));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_in_a_command_stays_one_shell_word() {
        assert_eq!(shell_word("echo 'a b'"), r"'echo '\''a b'\'''");
    }
}
