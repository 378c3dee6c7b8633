//! References for answers collected before or elsewhere (`hspi dataset references`): hspi's
//! formats teacher-forced on each answer's own tokens, as a fresh audit computes them while it
//! asks — so that an auditor can compute them later, on another machine, or one format per job
//! of a cluster's array, and weigh the answers with `hspi verify ANSWERS --references REFS…`.

use std::path::Path;

use hspi_collect::atlas::slurm::{self, SlurmOptions};
use hspi_collect::residency::Residency;
use hspi_collect::session::ForcedSession;
use hspi_collect::teacher_forced::{ForcedEngines, ReferenceEngine};
use hspi_datasets::{Dataset, NumericFormat, OpenMode, Platform};

use crate::error::AuditError;

/// What to compute: the answers, the model's weights, the formats, and where the references go.
pub struct ForcedReferences<'a> {
    pub answers: &'a Path,
    pub weights: &'a Path,
    pub formats: Vec<NumericFormat>,
    /// Engines the user runs computing references too (`audit --reference-server`, …).
    pub servers: Vec<ReferenceEngine>,
    /// How long each engine may take to answer its first health check.
    pub engine_wait: std::time::Duration,
    pub out: &'a Path,
    pub mode: OpenMode,
    pub residency: Residency,
    /// The command line, recorded as the references' provenance.
    pub command: &'a str,
}

/// The references, written as each answer's come (an interrupted run keeps those it made);
/// returns how many records were written.
pub fn forced_references(mut job: ForcedReferences) -> Result<usize, AuditError> {
    for engine in &mut job.servers {
        engine.wait_until_ready(job.engine_wait)?;
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

/// An engine an array task starts for itself: the platform it runs (taken on the user's word,
/// named in the references), and the shell command serving the model on the port `{port}`
/// stands for. Written `PLATFORM=COMMAND`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEngine {
    pub platform: Platform,
    pub command: String,
}

impl std::str::FromStr for TaskEngine {
    type Err = AuditError;

    fn from_str(s: &str) -> Result<TaskEngine, AuditError> {
        let bad = |reason: &str| AuditError::BadEngine {
            spec: s.to_string(),
            reason: reason.to_string(),
        };
        let (platform, command) = s
            .split_once('=')
            .ok_or_else(|| bad("it is not PLATFORM=COMMAND"))?;
        let platform = platform
            .trim()
            .parse()
            .map_err(|e: hspi_datasets::PlatformParseError| bad(&e.to_string()))?;
        if !command.contains(PORT) {
            return Err(bad(
                "the command names no {port}: each task's engine listens on a port of its own",
            ));
        }
        Ok(TaskEngine {
            platform,
            command: command.trim().to_string(),
        })
    }
}

/// What stands for a task's port in an engine's command.
const PORT: &str = "{port}";

/// How an array task asks the engine it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineApi {
    /// Completions with prompt logprobs, one request per answer (vLLM's; `--reference-endpoint`).
    Completions,
    /// llama-server, asked position by position (`--reference-server`).
    LlamaServer,
}

impl EngineApi {
    fn flag(self) -> &'static str {
        match self {
            EngineApi::Completions => "--reference-endpoint",
            EngineApi::LlamaServer => "--reference-server",
        }
    }
}

/// The engines an array's tasks start, how they are asked, how long each may take to load, and
/// the port of the array's first task (each task listens on that plus its index).
pub struct TaskEngines {
    pub engines: Vec<TaskEngine>,
    pub api: EngineApi,
    pub wait: std::time::Duration,
    pub first_port: u16,
}

/// A word as one shell word, single-quoted.
fn shell_word(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// An sbatch array computing the references of `answers`: one task per format of hspi's, each
/// into `out/FORMAT`, then one task per engine the user names, each starting that engine on its
/// own port, waiting for it, computing its references into `out/PLATFORM-SLUG` and stopping it
/// (`logs/` beside them, which the caller makes): the same command on a cluster's nodes, its
/// results weighed together with `hspi verify ANSWERS --references out/*`.
pub fn references_slurm_script(
    answers: &Path,
    weights: &Path,
    formats: &[NumericFormat],
    engines: &TaskEngines,
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
    let words = |f: &dyn Fn(&TaskEngine) -> String| -> String {
        let w: Vec<String> = engines.engines.iter().map(|e| shell_word(&f(e))).collect();
        w.join(" ")
    };
    s.push_str("set -euo pipefail\n");
    s.push_str(&format!("formats=({})\n", names.join(" ")));
    s.push_str(&format!(
        "platforms=({})\n",
        words(&|e| e.platform.to_string())
    ));
    s.push_str(&format!("slugs=({})\n", words(&|e| e.platform.slug())));
    s.push_str(&format!("commands=({})\n", words(&|e| e.command.clone())));
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
    s.push_str(&format!("port=$(({} + task))\n", engines.first_port));
    // Job control gives the engine a process group of its own, stopped whole on exit.
    s.push_str("set -m\n");
    s.push_str("bash -c \"${commands[$e]//\\{port\\}/$port}\" &\n");
    s.push_str("engine=$!\n");
    s.push_str(
        "trap 'kill -- -$engine 2>/dev/null || true; wait $engine 2>/dev/null || true' EXIT\n",
    );
    s.push_str(&format!(
        "{references} {} \"http://127.0.0.1:$port=${{platforms[$e]}}\" --engine-wait {} --out \"{}/${{slugs[$e]}}\" --force\n",
        engines.api.flag(),
        engines.wait.as_secs(),
        out.display()
    ));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_is_a_platform_and_a_command_listening_on_its_port() {
        let e: TaskEngine =
            "cpu-avx2/vllm-0.32.0/f32/bs1=vllm serve m --port {port} --dtype float32"
                .parse()
                .unwrap();
        assert_eq!(e.platform.to_string(), "cpu-avx2/vllm-0.32.0/f32/bs1");
        assert_eq!(e.command, "vllm serve m --port {port} --dtype float32");
        let no_port = "cpu-avx2/vllm-0.32.0/f32/bs1=vllm serve m"
            .parse::<TaskEngine>()
            .unwrap_err();
        assert!(no_port.to_string().contains("{port}"), "{no_port}");
        let no_platform = "vllm serve m --port {port}"
            .parse::<TaskEngine>()
            .unwrap_err();
        assert!(
            no_platform.to_string().contains("PLATFORM=COMMAND"),
            "{no_platform}"
        );
    }

    #[test]
    fn a_quote_in_a_command_stays_one_shell_word() {
        assert_eq!(shell_word("echo 'a b'"), r"'echo '\''a b'\'''");
    }
}
