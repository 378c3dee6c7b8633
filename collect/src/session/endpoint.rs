//! An endpoint opened for collection: its dataset (created or resumed), its budget, its client
//! and journal. It collects a whole probe set, or answers one probe at a time for the verifier,
//! storing every answer either way.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hspi_datasets::{
    manifest::unix_now, AskedAs, DatasetWriter, Hardware, Manifest, ModelInfo, OpenMode, Platform,
    ProbeInput, ProbeSet, Record, SCHEMA_VERSION,
};

use super::{new_session, probe_set_info};
use crate::collector::{collect, CollectSummary, PendingTarget, Progress};
use crate::error::{CollectError, Result};
use crate::http::{
    shape_for_url, shape_named, ApiShape, Budget, BudgetLimits, Client, ClientConfig, HttpTarget,
    Journal, RequestOptions, Spent,
};
use crate::target::Target;

/// Everything about asking an endpoint, as flags give it.
#[derive(Debug, Clone)]
pub struct EndpointOptions {
    pub url: String,
    /// `chat` or `completions`; None: from the URL's path.
    pub api: Option<String>,
    /// The model name to ask for.
    pub model: String,
    /// The platform the endpoint is known to run (reference datasets).
    pub label: Option<Platform>,
    /// Read from the environment by the caller; never printed or stored.
    pub api_key: Option<String>,
    pub concurrency: usize,
    pub rate_limit: Option<f64>,
    pub timeout: Duration,
    pub retries: u32,
    pub budget: BudgetLimits,
    /// Default: OUT/journal.jsonl.
    pub journal: Option<PathBuf>,
    /// Accept answers without logprobs.
    pub text_only: bool,
    pub allow_model_mismatch: bool,
    /// Send only OpenAI's own fields.
    pub strict_openai: bool,
}

/// The API key in the environment variable `var` (never from a command line).
pub fn api_key_from_env(var: Option<&str>) -> Result<Option<String>> {
    let Some(var) = var else { return Ok(None) };
    match std::env::var(var) {
        Ok(k) if !k.is_empty() => Ok(Some(k)),
        _ => Err(CollectError::ApiKeyMissing { var: var.into() }),
    }
}

/// How a whole-probe-set collection from an endpoint ended: complete, or stopped at the budget
/// cap with every answer so far kept.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EndpointCollected {
    pub out: PathBuf,
    #[serde(skip)]
    pub url: String,
    pub written: usize,
    pub already_done: usize,
    pub spent: Spent,
    /// Why the budget stopped it (None: every probe answered).
    #[serde(skip)]
    pub stopped: Option<String>,
}

impl std::fmt::Display for EndpointCollected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.stopped {
            None => write!(
                f,
                "collected {} records ({} already present) from {} into {}; spent {}",
                self.written,
                self.already_done,
                self.url,
                self.out.display(),
                self.spent
            ),
            Some(why) => write!(
                f,
                "stopped at the budget cap: {why}\nspent {}; records so far are in {} (rerun with --resume and a larger budget to continue)",
                self.spent,
                self.out.display()
            ),
        }
    }
}

pub struct EndpointSession {
    pub url: String,
    pub id: String,
    pub label: Option<Platform>,
    pub probes: ProbeSet,
    pub out: PathBuf,
    pub writer: DatasetWriter,
    pub budget: Arc<Budget>,
    pub target: HttpTarget,
}

fn shape(o: &EndpointOptions) -> Result<&'static dyn ApiShape> {
    let bad = |reason: String| CollectError::Http {
        url: o.url.clone(),
        reason,
    };
    match &o.api {
        Some(name) => shape_named(name).map_err(|e| bad(format!("--api: {e}"))),
        None => shape_for_url(&o.url).ok_or_else(|| {
            bad("the path names no API shape hspi speaks (…/chat/completions or …/completions)\nhint: pass --api chat or --api completions".into())
        }),
    }
}

/// `http://127.0.0.1…`, `http://localhost…` or `http://[::1]…`.
fn is_loopback(url: &str) -> bool {
    let host = url.split("://").nth(1).unwrap_or(url);
    ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .any(|h| host.starts_with(h) && host[h.len()..].starts_with([':', '/']) || host == *h)
}

impl EndpointSession {
    /// Open the endpoint's dataset in `out` for `probes` (text prompts).
    pub fn open(
        o: &EndpointOptions,
        probes: ProbeSet,
        out: &Path,
        mode: OpenMode,
        command: &str,
    ) -> Result<EndpointSession> {
        let shape = shape(o)?;
        if let Some(p) = probes
            .probes
            .iter()
            .find(|p| !matches!(p.input, ProbeInput::Prompt { .. }))
        {
            return Err(CollectError::ProbeMismatch {
                probe: p.id.clone(),
                model: o.model.clone(),
                reason: "not a text prompt\nhint: write endpoint probes with `hspi probe prompts`"
                    .into(),
            });
        }
        let id = HttpTarget::target_id(&o.url, &o.model);
        // Unlabelled endpoints are what we want to identify: their records carry no platform.
        let manifest = Manifest {
            schema_version: SCHEMA_VERSION,
            created_unix: unix_now(),
            model: ModelInfo::new(
                o.model.clone(),
                "unknown (served remotely)",
                hspi_datasets::COMPLETION_ENDPOINT,
            ),
            probe_set: probe_set_info(&probes),
            platforms: o.label.iter().cloned().collect(),
            sessions: Vec::new(),
        };
        let mut session = new_session(command);
        // A GPU-labelled engine served on this machine (a reference collection beside the
        // server): the provenance names the GPUs here. A remote server's GPUs are unknown.
        if o.label
            .as_ref()
            .is_some_and(|p| matches!(p.hardware, Hardware::Cuda { .. }))
            && is_loopback(&o.url)
        {
            session.provenance.gpus = crate::backend::local_gpus();
        }
        let writer = DatasetWriter::open(out, &manifest, &probes, session, mode)?;
        let journal_path = o
            .journal
            .clone()
            .unwrap_or_else(|| out.join("journal.jsonl"));
        let journal = Arc::new(Journal::open(&journal_path)?);
        let client = Client::new(
            ClientConfig {
                timeout: o.timeout,
                max_retries: o.retries,
                rate_limit: o.rate_limit,
                ..Default::default()
            },
            o.api_key.clone(),
        )?;
        let budget = Arc::new(Budget::new(o.budget));
        let target = HttpTarget {
            id: id.clone(),
            url: o.url.clone(),
            shape,
            model: o.model.clone(),
            options: RequestOptions {
                llama_extensions: !o.strict_openai,
            },
            platform: o.label.clone(),
            client: Arc::new(client),
            budget: budget.clone(),
            journal,
            concurrency: o.concurrency,
            allow_model_mismatch: o.allow_model_mismatch,
            require_logprobs: !o.text_only,
        };
        Ok(EndpointSession {
            url: o.url.clone(),
            id,
            label: o.label.clone(),
            probes,
            out: out.to_path_buf(),
            writer,
            budget,
            target,
        })
    }

    /// Collect every probe not answered yet, then seal the dataset (also when a request failed
    /// or the budget stopped it: every answer received is kept).
    pub fn collect(self, progress: &dyn Progress) -> (Result<CollectSummary>, Spent) {
        let EndpointSession {
            id,
            label,
            probes,
            mut writer,
            budget,
            target,
            ..
        } = self;
        let make = || -> Result<Box<dyn Target>> { Ok(Box::new(target.clone())) };
        let targets = [PendingTarget {
            id,
            platform: label,
            open: Box::new(make),
        }];
        let result = collect(&mut writer, &targets, &probes, progress);
        let sealed = writer.finish().map_err(CollectError::from);
        let result = match (result, sealed) {
            (Ok(s), Ok(())) => Ok(s),
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        };
        (result, budget.spent())
    }

    /// Collect every probe not answered yet (`hspi collect --endpoint`); a budget stop is an
    /// outcome, not an error.
    pub fn collect_all(self, progress: &dyn Progress) -> Result<EndpointCollected> {
        let (url, out) = (self.url.clone(), self.out.clone());
        let (result, spent) = self.collect(progress);
        let (done, stopped) = match result {
            Ok(done) => (done, None),
            Err(CollectError::Budget { reached, after }) => {
                let after = after.map(|a| format!(" (after: {a})")).unwrap_or_default();
                (CollectSummary::default(), Some(format!("{reached}{after}")))
            }
            Err(e) => return Err(e),
        };
        Ok(EndpointCollected {
            out,
            url,
            written: done.written,
            already_done: done.already_done,
            spent,
            stopped,
        })
    }

    /// Ask one probe and store its answer (once) before returning it.
    pub fn ask(&mut self, probe_id: &str) -> Result<Record> {
        self.ask_probe(probe_id, true)
    }

    /// Ask one probe again with a fresh request (never from the journal): a repeat that tells
    /// whether the endpoint answers a temperature-0 request the same way twice. The journal
    /// keeps the answer; the dataset keeps its first answer.
    pub fn ask_again(&mut self, probe_id: &str) -> Result<Record> {
        self.ask_probe(probe_id, false)
    }

    /// Whether prompts reach the model through its chat template (as the API shape asks).
    pub fn asks_chat(&self) -> bool {
        self.target.shape.asked_as() == AskedAs::ChatTemplate
    }

    /// Failed attempts so far (timeouts, 5xx, malformed bodies …), counted apart from answers.
    pub fn failures(&self) -> crate::http::TransportFailures {
        self.target.client.failures()
    }

    fn ask_probe(&mut self, probe_id: &str, replay: bool) -> Result<Record> {
        let probe = self
            .probes
            .probes
            .iter()
            .find(|p| p.id == probe_id)
            .ok_or_else(|| CollectError::ProbeMismatch {
                probe: probe_id.into(),
                model: self.target.model.clone(),
                reason: "not in this session's probe set".into(),
            })?;
        let started = Instant::now();
        let answer = if replay {
            self.target
                .answer(&[probe])?
                .pop()
                .ok_or_else(|| CollectError::Http {
                    url: self.url.clone(),
                    reason: "the endpoint returned no answer".into(),
                })?
        } else {
            self.target.answer_fresh(probe)?
        };
        let record = answer.into_record(
            &probe.id,
            &self.id,
            self.label.clone(),
            self.target.asked_as(),
            started.elapsed().as_micros() as u64,
        );
        if !self.writer.is_done(&self.id, &record.probe_id) {
            self.writer.append(std::slice::from_ref(&record))?;
        }
        Ok(record)
    }

    /// Seal the dataset; what the budget spent.
    pub fn finish(self) -> Result<Spent> {
        self.writer.finish()?;
        Ok(self.budget.spent())
    }
}

#[cfg(test)]
mod tests {
    use super::is_loopback;

    #[test]
    fn only_this_machine_counts_as_loopback() {
        assert!(is_loopback("http://127.0.0.1:8080/v1/chat/completions"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:9000/v1"));
        assert!(!is_loopback("https://127.0.0.1.example.com/v1"));
        assert!(!is_loopback("https://api.example.com/v1"));
    }
}
