//! `hspi collect --endpoint URL`: collection from an OpenAI-compatible endpoint, paying safely.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use hspi_collect::http::{
    ApiShape, Budget, BudgetLimits, Client, ClientConfig, HttpTarget, Journal, RequestOptions,
};
use hspi_collect::{collect, CollectError, PendingTarget};
use hspi_datasets::{
    manifest::unix_now, DatasetWriter, Manifest, ModelInfo, Platform, ProbeInput, SCHEMA_VERSION,
};

use super::collect::{new_session, open_mode, probe_set_info, Args};
use crate::printer;
use crate::progress::Bar;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct EndpointArgs {
    /// Collect from this OpenAI-compatible URL (…/v1/chat/completions or …/v1/completions).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// chat or completions (default: from the URL's path).
    #[arg(long)]
    pub api: Option<String>,
    /// The platform the endpoint is known to run (for reference datasets), e.g.
    /// cpu-avx2/llamacpp-11434/q8_0/bs1. Without it records carry no platform label.
    #[arg(long)]
    pub label: Option<String>,
    /// Name of the environment variable holding the API key (never printed or stored).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Requests per second at most.
    #[arg(long)]
    pub rate_limit: Option<f64>,
    /// Seconds before a request is abandoned (and retried).
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    /// Retries per request on 429/5xx/timeouts/resets.
    #[arg(long, default_value_t = 5)]
    pub retries: u32,
    /// Stop before sending more than this many requests (retries included).
    #[arg(long)]
    pub max_requests: Option<u64>,
    /// Stop before the output tokens could exceed this.
    #[arg(long)]
    pub max_output_tokens: Option<u64>,
    /// Stop before the cost could exceed this (with --price-input/--price-output).
    #[arg(long)]
    pub max_cost: Option<f64>,
    /// Price per million input tokens.
    #[arg(long, default_value_t = 0.0)]
    pub price_input: f64,
    /// Price per million output tokens.
    #[arg(long, default_value_t = 0.0)]
    pub price_output: f64,
    /// Journal of raw responses (default: DIR/journal.jsonl). Reused answers cost nothing.
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Accept answers without logprobs (text-only evidence).
    #[arg(long)]
    pub text_only: bool,
    /// Accept an answer whose `model` differs from --model.
    #[arg(long)]
    pub allow_model_mismatch: bool,
    /// Send only OpenAI's own fields (no cache_prompt / repeat_penalty).
    #[arg(long)]
    pub strict_openai: bool,
    /// Tokens to generate per generated prompt (with --probes N).
    #[arg(long, default_value_t = 8)]
    pub max_tokens: u32,
    /// Logprob alternatives per token (with --probes N).
    #[arg(long, default_value_t = 5)]
    pub top_logprobs: u32,
}

fn api_key(var: &Option<String>) -> anyhow::Result<Option<String>> {
    let Some(var) = var else { return Ok(None) };
    match std::env::var(var) {
        Ok(k) if !k.is_empty() => Ok(Some(k)),
        _ => bail!("--api-key-env {var}: the environment variable {var} is not set (the key is read from it, never from the command line)"),
    }
}

/// An endpoint opened for collection: its dataset (created or resumed), budget and target.
pub struct EndpointSession {
    pub url: String,
    pub id: String,
    pub label: Option<Platform>,
    pub probes: hspi_datasets::ProbeSet,
    pub writer: DatasetWriter,
    pub budget: Arc<Budget>,
    pub target: HttpTarget,
}

pub fn open_endpoint(args: &Args) -> anyhow::Result<EndpointSession> {
    let e = &args.endpoint;
    let url = e.endpoint.clone().expect("called with --endpoint");
    let shape = match e.api.as_deref() {
        Some("chat") => ApiShape::Chat,
        Some("completions") => ApiShape::Completions,
        Some(other) => bail!("--api {other}: expected chat or completions"),
        None => ApiShape::from_url(&url).with_context(|| {
            format!("--endpoint {url}: the path names neither /chat/completions nor /completions\nhint: pass --api chat or --api completions")
        })?,
    };
    let key = api_key(&e.api_key_env)?;
    let probes = match args.probes.parse::<usize>() {
        Ok(0) => bail!("--probes 0: at least one probe is needed"),
        Ok(n) => hspi_probe::prompts(args.seed, n, e.max_tokens, e.top_logprobs),
        Err(_) => hspi_probe::read_probe_set(Path::new(&args.probes))?,
    };
    if let Some(p) = probes
        .probes
        .iter()
        .find(|p| !matches!(p.input, ProbeInput::Prompt { .. }))
    {
        bail!("probe {} in {} is not a text prompt\nhint: write endpoint probes with `hspi probe prompts`", p.id, args.probes);
    }
    let label: Option<Platform> = e.label.as_deref().map(str::parse).transpose()?;
    let id = HttpTarget::target_id(&url, &args.model);
    // Unlabelled endpoints are what we want to identify: their records carry no platform.
    let platforms: Vec<Platform> = label.iter().cloned().collect();
    let manifest = Manifest {
        schema_version: SCHEMA_VERSION,
        created_unix: unix_now(),
        model: ModelInfo {
            id: args.model.clone(),
            weights_sha256: "unknown (served remotely)".into(),
            task: "completion-endpoint".into(),
        },
        probe_set: probe_set_info(&probes),
        platforms,
        sessions: Vec::new(),
    };
    let writer = DatasetWriter::open(
        &args.out,
        &manifest,
        &probes,
        new_session(),
        open_mode(args),
    )?;
    let journal_path = e
        .journal
        .clone()
        .unwrap_or_else(|| args.out.join("journal.jsonl"));
    let journal = Arc::new(Journal::open(&journal_path)?);
    let client = Client::new(
        ClientConfig {
            timeout: Duration::from_secs_f64(e.timeout),
            max_retries: e.retries,
            rate_limit: e.rate_limit,
            ..Default::default()
        },
        key,
    )
    .map_err(|reason| CollectError::Http {
        url: url.clone(),
        reason,
    })?;
    let budget = Arc::new(Budget::new(BudgetLimits {
        max_requests: e.max_requests,
        max_output_tokens: e.max_output_tokens,
        max_cost: e.max_cost,
        price_input_per_m: e.price_input,
        price_output_per_m: e.price_output,
    }));
    let client = Arc::new(client);
    let target = HttpTarget {
        id: id.clone(),
        url: url.clone(),
        shape,
        model: args.model.clone(),
        options: RequestOptions {
            llama_extensions: !e.strict_openai,
        },
        platform: label.clone(),
        client: client.clone(),
        budget: budget.clone(),
        journal: journal.clone(),
        concurrency: e.concurrency,
        allow_model_mismatch: e.allow_model_mismatch,
        require_logprobs: !e.text_only,
    };
    Ok(EndpointSession {
        url,
        id,
        label,
        probes,
        writer,
        budget,
        target,
    })
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let EndpointSession {
        url,
        id,
        label,
        probes,
        mut writer,
        budget,
        target,
    } = open_endpoint(args)?;
    let make =
        || -> hspi_collect::Result<Box<dyn hspi_collect::Target>> { Ok(Box::new(target.clone())) };
    let targets = [PendingTarget {
        id: id.clone(),
        platform: label.clone(),
        open: Box::new(make),
    }];
    let result = collect(&mut writer, &targets, &probes, &Bar::new());
    writer
        .finish()
        .with_context(|| format!("sealing {}", args.out.display()))?;
    let spent = budget.spent();
    let cost = format!(
        "{} requests, {} output tokens, cost {:.6}",
        spent.requests, spent.output_tokens, spent.cost
    );
    match result {
        Ok(done) => {
            printer::status(&format!(
                "collected {} records ({} already present) from {url} into {}; spent {cost}",
                done.written,
                done.already_done,
                args.out.display()
            ));
            if args.json {
                printer::data(&serde_json::to_string_pretty(&serde_json::json!({
                    "out": args.out, "written": done.written, "already_done": done.already_done, "spent": spent,
                }))?);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(CollectError::Budget(reason)) => {
            printer::status(&format!(
                "stopped at the budget cap: {reason}\nspent {cost}; records so far are in {} (rerun with --resume and a larger budget to continue)",
                args.out.display()
            ));
            Ok(ExitCode::from(3))
        }
        Err(err) => Err(err.into()),
    }
}
