//! Building and extending audit packs: `hspi pack build` runs the engines it can run here (the
//! llama.cpp build of `.ci/build-llama`, each GGUF format made by llama-quantize; hspi's own
//! engine for the formats serving engines sell, bf16 to NVFP4, as vLLM computes them) and
//! collects from trusted endpoints; `hspi pack merge` adds platforms collected elsewhere. Both
//! train the classifier over every reference and reseal the pack.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use hspi_collect::llama::{LlamaBuild, LlamaServer};
use hspi_collect::session::{EndpointOptions, EndpointSession};
use hspi_collect::started_engine::{EngineCommand, StartedEngine};
use hspi_collect::zoo::codec::Codec;
use hspi_collect::zoo::model_config::ModelConfig;
use hspi_collect::zoo::Model;
use hspi_collect::NoProgress;
use hspi_datasets::{
    manifest::unix_now, Dataset, FormatFamily, GgufType, NumericFormat, OpenMode, Platform,
    ProbeInput, ProbeSet, Record,
};
use hspi_pack::{
    copy_tree, dataset_dirs, seal, Pack, PackError, PackManifest, PackModel, PackPlatform,
    PoolInfo, PromptTokens, CLASSIFIER, POOL, PROMPT_TOKENS, REFERENCES, REPEATS, SCHEMA,
};

use crate::error::AuditError;
use crate::train::{train_on_shared_probes, TrainOptions, TrainSpec};
use crate::Lines;

/// Where a pack build keeps what does not belong in the pack: requantised weights, journals.
pub fn work_dir() -> PathBuf {
    hspi_collect::zoo::cache_dir().join("pack-work")
}

/// Pool prompts asked again per platform: the classes' determinism flags.
pub const REPEATED_PROMPTS: usize = 8;

pub struct PackBuild<'a> {
    /// The model id: the name endpoints are asked for and local servers answer to.
    pub model: String,
    pub aliases: Vec<String>,
    /// Formats to compute here: GGUF formats through llama.cpp (f32, f16, q8_0, q4_0 …), the
    /// market's schemes through hspi's own engine (bf16, fp8-w8a8, int8-w8a8, int4-w4a16-g64,
    /// nvfp4-a16, mxfp4 …), router words for every format they cover (fp8, int8, int4, fp4 …).
    pub formats: Vec<String>,
    /// The weights the local formats are made from and the tokenizer counts billing with
    /// (default with --formats: the fetched file, for a model `hspi fetch` knows).
    pub gguf: Option<PathBuf>,
    /// The llama.cpp build (`…/VERSION/VARIANT/bin`; default: `.ci/build-llama avx2`'s).
    pub llama_bin: Option<PathBuf>,
    /// Trusted endpoints' URLs, and the platform each is trusted to run (in the same order).
    pub endpoints: Vec<String>,
    pub labels: Vec<String>,
    /// Engines the build starts itself and collects from as trusted endpoints, and how long
    /// each may take to answer.
    pub started: (Vec<EngineCommand>, std::time::Duration),
    /// The trusted endpoints' API key.
    pub api_key: Option<String>,
    pub pool: ProbeSet,
    pub out: &'a Path,
    pub force: bool,
    pub command: &'a str,
}

/// Where a format of `--formats` is computed here.
#[derive(Debug, Clone, PartialEq)]
enum LocalFormat {
    /// A GGUF format, made by llama-quantize and served by llama-server.
    Llama(String),
    /// A serving engine's scheme, computed by hspi's own engine (`hspi_collect::scheme`).
    Hspi(NumericFormat),
}

/// The formats llama.cpp makes here for a router word, beside hspi's schemes: fp32 and fp16 as
/// themselves, int8 as q8_0, int4 as q4_0.
const LLAMA_FOR_FAMILIES: [NumericFormat; 4] = [
    NumericFormat::F32,
    NumericFormat::F16,
    NumericFormat::Gguf(GgufType::Q8_0),
    NumericFormat::Gguf(GgufType::Q4_0),
];

/// `--formats` as the engines that compute them: exact formats as given, router words as every
/// format of their family (`FormatFamily::covers`, from each format's row) that an engine here
/// computes (`int8`: llama.cpp's q8_0 and the W8A8 scheme; `int4`: q4_0 and W4A16 at group 64,
/// SmolLM2's widths being no multiple of 128).
/// Whether `pack build --formats` takes `words` (the reason where it does not): what the guide's
/// commands are checked against.
pub fn check_formats(words: &[String]) -> Result<(), AuditError> {
    local_formats(words).map(drop)
}

fn local_formats(words: &[String]) -> Result<Vec<LocalFormat>, AuditError> {
    use LocalFormat::{Hspi, Llama};
    let mut out = Vec::new();
    for word in words {
        let w = word.to_ascii_lowercase();
        let formats: Vec<LocalFormat> = match w.parse::<FormatFamily>() {
            Ok(family) => {
                let llama = LLAMA_FOR_FAMILIES
                    .into_iter()
                    .filter(|f| family.covers(*f))
                    .map(|f| Llama(f.to_string()));
                let hspi = hspi_collect::scheme::market_formats()
                    .into_iter()
                    .filter(|f| family.covers(*f))
                    .map(Hspi);
                let formats: Vec<LocalFormat> = llama.chain(hspi).collect();
                if formats.is_empty() {
                    return Err(AuditError::NoEngineForFamily { word: word.clone() });
                }
                formats
            }
            Err(_) => match w.parse::<NumericFormat>() {
                Ok(f) if hspi_collect::scheme::for_format(f).is_some() => vec![Hspi(f)],
                _ => vec![Llama(w.clone())],
            },
        };
        for f in formats {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    Ok(out)
}

/// The trusted endpoints as collection options (the label parsed).
fn trusted_endpoints(b: &PackBuild) -> Result<Vec<EndpointOptions>, AuditError> {
    if b.labels.len() != b.endpoints.len() {
        return Err(AuditError::EndpointLabelsUnpaired);
    }
    b.endpoints
        .iter()
        .zip(&b.labels)
        .map(|(url, label)| trusted_endpoint(&b.model, url, label, b.api_key.as_deref()))
        .collect()
}

/// One trusted endpoint as collection options.
fn trusted_endpoint(
    model: &str,
    url: &str,
    label: &str,
    api_key: Option<&str>,
) -> Result<EndpointOptions, AuditError> {
    let mut o = endpoint_defaults(url, model);
    o.label = Some(label.parse().map_err(hspi_collect::CollectError::from)?);
    o.api_key = api_key.map(String::from);
    Ok(o)
}

/// One platform a pack build collects (its references over the whole pool, and its repeats):
/// what `pack build` runs one after another and a scheduler's array runs one per task
/// (`crate::pack_plan`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "engine", rename_all = "kebab-case")]
pub enum PackJob {
    /// A GGUF format, made by llama-quantize and served by llama-server.
    Llama { format: String },
    /// A serving engine's scheme, computed by hspi's own engine (`hspi_collect::scheme`).
    Hspi { format: String },
    /// A trusted endpoint, and the platform it is trusted to run.
    Endpoint { url: String, label: String },
    /// An engine the job starts itself (`PLATFORM=COMMAND`, `hspi_collect::started_engine`),
    /// collected from as a trusted endpoint and stopped after.
    Started { platform: String, command: String },
}

impl PackJob {
    /// Whether it computes here from the weights (not a trusted endpoint).
    pub fn is_local(&self) -> bool {
        !matches!(self, PackJob::Endpoint { .. } | PackJob::Started { .. })
    }
}

impl std::fmt::Display for PackJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackJob::Llama { format } => write!(f, "{format} on llama.cpp"),
            PackJob::Hspi { format } => write!(f, "{format} on hspi's own engine"),
            PackJob::Endpoint { url, label } => write!(f, "{label} from {url}"),
            PackJob::Started { platform, command } => {
                write!(f, "{platform} from an engine started here: {command}")
            }
        }
    }
}

/// The build's jobs in the order `pack build` runs them: hspi's own engine's formats, then
/// llama.cpp's, then the trusted endpoints; checked (formats known, endpoints labelled).
pub fn pack_jobs(b: &PackBuild) -> Result<Vec<PackJob>, AuditError> {
    let endpoints = trusted_endpoints(b)?;
    if b.formats.is_empty() && b.endpoints.is_empty() && b.started.0.is_empty() {
        return Err(AuditError::NothingToBuild);
    }
    let local = local_formats(&b.formats)?;
    let hspi = local.iter().filter_map(|f| match f {
        LocalFormat::Hspi(format) => Some(PackJob::Hspi {
            format: format.to_string(),
        }),
        LocalFormat::Llama(_) => None,
    });
    let llama = local.iter().filter_map(|f| match f {
        LocalFormat::Llama(format) => Some(PackJob::Llama {
            format: format.clone(),
        }),
        LocalFormat::Hspi(_) => None,
    });
    let trusted = endpoints.iter().map(|o| PackJob::Endpoint {
        url: o.url.clone(),
        label: o
            .label
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
    });
    let started = b.started.0.iter().map(|e| PackJob::Started {
        platform: e.platform.to_string(),
        command: e.command.clone(),
    });
    Ok(hspi.chain(llama).chain(trusted).chain(started).collect())
}

/// What every job of one build shares.
pub struct JobContext<'a> {
    pub model: &'a str,
    /// The weights local formats are made from, and their sha256.
    pub gguf: Option<(&'a Path, &'a str)>,
    pub llama_bin: Option<&'a Path>,
    pub api_key: Option<&'a str>,
    pub pool: &'a ProbeSet,
    pub command: &'a str,
    /// How long an engine a job starts may take to answer.
    pub engine_wait: std::time::Duration,
}

/// Run `job`: its platform's references and repeats collected into `into`'s `references/` and
/// `repeats/`; the platform and what produced it.
pub fn run_job(
    ctx: &JobContext,
    job: &PackJob,
    into: &Path,
    lines: &Lines,
) -> Result<(String, String), AuditError> {
    let weights = || ctx.gguf.ok_or(AuditError::FormatsWithoutWeights);
    match job {
        PackJob::Hspi { format } => {
            let (gguf, _) = weights()?;
            let format =
                format
                    .parse::<NumericFormat>()
                    .map_err(|e| AuditError::FormatNotComputed {
                        format: format!("{format} ({})", e.reason),
                        model: ctx.model.to_string(),
                    })?;
            let (o, server) = hspi_engine(ctx.model, gguf, format)?;
            let source = format!(
                "hspi's own engine (candle {}, {} as vLLM computes it) serving {}",
                hspi_collect::CANDLE_VERSION,
                format,
                gguf.file_name().unwrap_or_default().to_string_lossy()
            );
            let label = collect_platform(ctx, &o, into, lines)?;
            drop(server);
            Ok((label, source))
        }
        PackJob::Llama { format } => {
            let (gguf, sha) = weights()?;
            let quants = work_dir().join(format!("quants-{}", &sha[..12.min(sha.len())]));
            let build = LlamaBuild::at(
                &ctx.llama_bin
                    .map_or_else(LlamaBuild::default_dir, Path::to_path_buf),
            )?;
            // The file's own type is served as it is: requantising a K-quant mix is lossy.
            let own = hspi_collect::zoo::read_gguf(gguf)
                .ok()
                .and_then(|c| hspi_collect::backend::candle_cpu::llama_file_format(&c));
            let as_is = own.is_some_and(|own| format.parse() == Ok(own));
            let file = match as_is {
                true => gguf.to_path_buf(),
                false => build.quantize(gguf, format, &quants)?,
            };
            let server = LlamaServer::start(&build, &file, ctx.model)?;
            let o = EndpointOptions {
                label: Some(
                    build
                        .platform(format)
                        .parse()
                        .map_err(hspi_collect::CollectError::from)?,
                ),
                ..endpoint_defaults(&server.chat_url(), ctx.model)
            };
            let how = match as_is {
                true => "as it is".to_string(),
                false => format!("requantised to {}", format.to_ascii_uppercase()),
            };
            let source = format!(
                "local llama-server (llama.cpp {}, {}) serving {} {how}",
                build.build,
                build.variant,
                gguf.file_name().unwrap_or_default().to_string_lossy(),
            );
            let label = collect_platform(ctx, &o, into, lines)?;
            drop(server);
            Ok((label, source))
        }
        PackJob::Endpoint { url, label } => {
            let o = trusted_endpoint(ctx.model, url, label, ctx.api_key)?;
            let label = collect_platform(ctx, &o, into, lines)?;
            Ok((label, format!("trusted endpoint {url}")))
        }
        PackJob::Started { platform, command } => {
            let engine = EngineCommand {
                platform: platform.parse().map_err(hspi_collect::CollectError::from)?,
                command: command.clone(),
            };
            let started = StartedEngine::start(&engine, ctx.engine_wait)?;
            let url = format!("{}/v1/chat/completions", started.url);
            let o = trusted_endpoint(ctx.model, &url, platform, None)?;
            let label = collect_platform(ctx, &o, into, lines)?;
            drop(started);
            Ok((label, format!("an engine started by the build: {command}")))
        }
    }
}

/// The engine family a pack's platforms share (`llamacpp`), else `mixed`.
fn engine_family(platforms: &[String]) -> String {
    let kinds: HashSet<&str> = platforms
        .iter()
        .filter_map(|p| p.parse::<Platform>().ok())
        .map(|p| p.engine.kind.as_str())
        .collect();
    match kinds.len() {
        1 => kinds.into_iter().next().unwrap_or_default().to_string(),
        _ => "mixed".into(),
    }
}

fn slug(platform: &str) -> String {
    platform.replace('/', "_")
}

/// The datasets of the pack being built in `work` under `sub` whose answers are `platform`'s.
fn dirs_of_platform(work: &Path, sub: &str, platform: &str) -> Result<Vec<PathBuf>, AuditError> {
    let mut found = Vec::new();
    for d in dataset_dirs(work, sub)? {
        let records = Dataset::open(&d)?.records()?;
        if records
            .first()
            .is_some_and(|r| r.platform_key() == platform)
        {
            found.push(d);
        }
    }
    Ok(found)
}

/// A directory under `root` named for `platform`, not taken yet.
fn free_dir(root: &Path, platform: &str) -> PathBuf {
    let base = slug(platform);
    (1..)
        .map(|i| {
            if i == 1 {
                root.join(&base)
            } else {
                root.join(format!("{base}-{i}"))
            }
        })
        .find(|d| !d.exists())
        .expect("some name is free")
}

/// Collect `probes` from the endpoint into `dir` (a journal outside the pack).
fn collect_into(
    o: &EndpointOptions,
    probes: &ProbeSet,
    dir: &Path,
    command: &str,
) -> Result<(), AuditError> {
    let mut o = o.clone();
    let journals = work_dir().join("journals");
    std::fs::create_dir_all(&journals).map_err(AuditError::io(&journals))?;
    o.journal = Some(journals.join(format!(
        "{}-{}-{}.jsonl",
        dir.file_name().unwrap_or_default().to_string_lossy(),
        unix_now(),
        std::process::id()
    )));
    let session = EndpointSession::open(&o, probes.clone(), dir, OpenMode::Create, command)?;
    let (result, _) = session.collect(&NoProgress);
    result?;
    Ok(())
}

/// One platform's references (the whole pool) and repeats (its first `repeats` prompts), into
/// `into`'s `references/` and `repeats/`; the platform.
fn collect_platform(
    ctx: &JobContext,
    o: &EndpointOptions,
    into: &Path,
    lines: &Lines,
) -> Result<String, AuditError> {
    let label = o
        .label
        .as_ref()
        .map(|l| l.to_string())
        .ok_or_else(|| AuditError::EndpointWithoutLabel { url: o.url.clone() })?;
    (lines.status)(&format!(
        "collecting {} pool prompts for {label} from {}",
        ctx.pool.probes.len(),
        o.url
    ));
    collect_into(
        o,
        ctx.pool,
        &free_dir(&into.join(REFERENCES), &label),
        ctx.command,
    )?;
    let first = ProbeSet {
        probes: ctx
            .pool
            .probes
            .iter()
            .take(REPEATED_PROMPTS)
            .cloned()
            .collect(),
        ..ctx.pool.clone()
    };
    collect_into(
        o,
        &first,
        &free_dir(&into.join(REPEATS), &label),
        ctx.command,
    )?;
    Ok(label)
}

/// Build a pack in `b.out`; the pack and its summary.
pub fn build_pack(b: PackBuild, lines: &Lines) -> Result<Pack, AuditError> {
    let gguf = build_weights(&b)?;
    let jobs = pack_jobs(&b)?;
    needs_weights(&jobs, gguf.as_deref())?;
    empty_out(b.out, b.force)?;
    hspi_probe::write_probe_set(&b.out.join(POOL), &b.pool)?;
    let weights = Weights::of(gguf.as_deref())?;
    let ctx = JobContext {
        model: &b.model,
        gguf: weights.pair(),
        llama_bin: b.llama_bin.as_deref(),
        api_key: b.api_key.as_deref(),
        pool: &b.pool,
        command: b.command,
        engine_wait: b.started.1,
    };
    let mut sources = BTreeMap::new();
    for job in &jobs {
        let (label, source) = run_job(&ctx, job, b.out, lines)?;
        sources.insert(label, source);
    }
    let spec = BuiltPack {
        model: &b.model,
        aliases: &b.aliases,
        weights: &weights,
        jobs: &jobs,
        pool: &b.pool,
        provenance: vec![b.command.to_string()],
    };
    seal_built(b.out, &spec, &sources, lines)
}

/// The weights local formats are made from: `--gguf`, else the fetched file of a model `hspi
/// fetch` knows, where formats are asked for.
pub(crate) fn build_weights(b: &PackBuild) -> Result<Option<PathBuf>, AuditError> {
    Ok(match (&b.gguf, b.model.as_str()) {
        (None, model) if !b.formats.is_empty() => {
            hspi_collect::zoo::fetched_weights(model).transpose()?
        }
        (g, _) => g.clone(),
    })
}

/// Refused before anything is written: formats to compute and no weights to compute them from.
pub(crate) fn needs_weights(jobs: &[PackJob], gguf: Option<&Path>) -> Result<(), AuditError> {
    let local = jobs.iter().any(PackJob::is_local);
    match (local, gguf) {
        (true, None) => Err(AuditError::FormatsWithoutWeights),
        _ => Ok(()),
    }
}

/// `out` made empty: refused where it holds anything, unless `force`.
pub(crate) fn empty_out(out: &Path, force: bool) -> Result<(), AuditError> {
    if out.exists()
        && std::fs::read_dir(out)
            .map_err(AuditError::io(out))?
            .next()
            .is_some()
    {
        if !force {
            return Err(AuditError::OutExists {
                path: out.display().to_string(),
            });
        }
        std::fs::remove_dir_all(out).map_err(AuditError::io(out))?;
    }
    std::fs::create_dir_all(out).map_err(AuditError::io(out))
}

/// The weights of a build, read once: their sha256 and tokenizer.
pub(crate) struct Weights {
    path: Option<PathBuf>,
    sha256: Option<String>,
    codec: Option<Codec>,
}

impl Weights {
    pub(crate) fn of(gguf: Option<&Path>) -> Result<Weights, AuditError> {
        let Some(gguf) = gguf else {
            return Ok(Weights {
                path: None,
                sha256: None,
                codec: None,
            });
        };
        Ok(Weights {
            path: Some(gguf.to_path_buf()),
            sha256: Some(hspi_collect::zoo::sha256_file(gguf)?),
            codec: Some(Codec::from_gguf(gguf)?),
        })
    }

    pub(crate) fn pair(&self) -> Option<(&Path, &str)> {
        Some((self.path.as_deref()?, self.sha256.as_deref()?))
    }
}

/// What a built pack's manifest says besides its platforms.
pub(crate) struct BuiltPack<'a> {
    pub model: &'a str,
    pub aliases: &'a [String],
    pub weights: &'a Weights,
    pub jobs: &'a [PackJob],
    pub pool: &'a ProbeSet,
    pub provenance: Vec<String>,
}

/// The pool's token counts, the manifest, the classifier over every reference, the seal.
pub(crate) fn seal_built(
    out: &Path,
    spec: &BuiltPack,
    sources: &BTreeMap<String, String>,
    lines: &Lines,
) -> Result<Pack, AuditError> {
    let endpoints: Vec<&str> = spec
        .jobs
        .iter()
        .filter_map(|j| match j {
            PackJob::Endpoint { url, .. } => Some(url.as_str()),
            _ => None,
        })
        .collect();
    let local = spec.jobs.iter().any(PackJob::is_local);
    let counts = prompt_tokens(out, spec.pool, &endpoints, spec.weights.codec.as_ref())?;
    let tokens_path = out.join(PROMPT_TOKENS);
    std::fs::write(
        &tokens_path,
        serde_json::to_string_pretty(&counts).expect("counts serialise"),
    )
    .map_err(AuditError::io(&tokens_path))?;
    let family = engine_family(&sources.keys().cloned().collect::<Vec<_>>());
    let manifest = PackManifest {
        schema: SCHEMA,
        id: String::new(),
        name: format!("{}-{family}", spec.model.to_ascii_lowercase()),
        model: PackModel {
            id: spec.model.to_string(),
            aliases: spec.aliases.to_vec(),
            weights_sha256: spec.weights.sha256.clone(),
            tokenizer_sha256: spec
                .weights
                .codec
                .as_ref()
                .and_then(|c| c.fingerprint().map(String::from)),
            architecture: spec
                .weights
                .path
                .as_deref()
                .filter(|_| local)
                .and_then(|w| ModelConfig::of_weights(w).ok())
                .map(|c| c.arch),
        },
        engine: family,
        hspi_version: env!("CARGO_PKG_VERSION").into(),
        created_unix: unix_now(),
        pool: PoolInfo {
            probes: spec.pool.probes.len(),
            hash: spec.pool.hash(),
            max_tokens: 0,
            top_logprobs: 0,
        },
        platforms: Vec::new(),
        provenance: spec.provenance.clone(),
        files: BTreeMap::new(),
    };
    finish(out, manifest, sources, spec.pool, lines)
}

/// hspi's own engine serving the pack's model at `format` on loopback, and how to ask it.
fn hspi_engine(
    model_id: &str,
    weights: &Path,
    format: NumericFormat,
) -> Result<(EndpointOptions, hspi_collect::serve::ServerHandle), AuditError> {
    let model = Model::language_model(model_id, weights)?;
    let platform =
        hspi_collect::backend::candle_cpu::language_model_platform(format).ok_or_else(|| {
            AuditError::FormatNotComputed {
                format: format.to_string(),
                model: model_id.to_string(),
            }
        })?;
    let server = hspi_collect::serve::start(model, &platform, "127.0.0.1:0")?;
    let o = EndpointOptions {
        label: Some(platform),
        ..endpoint_defaults(&format!("{}/chat/completions", server.base_url()), model_id)
    };
    Ok((o, server))
}

/// What an endpoint is asked with when hspi collects references from it.
pub fn endpoint_defaults(url: &str, model: &str) -> EndpointOptions {
    EndpointOptions {
        url: url.to_string(),
        api: None,
        model: model.to_string(),
        label: None,
        api_key: None,
        concurrency: 1,
        rate_limit: None,
        timeout: std::time::Duration::from_secs(120),
        retries: 5,
        budget: Default::default(),
        journal: None,
        text_only: false,
        allow_model_mismatch: false,
        strict_openai: false,
    }
}

/// The tokens each pool prompt is billed for: counted by hspi's tokenizer and the model's chat
/// template (checked against the local engine's usage), else the trusted endpoint's usage.
fn prompt_tokens(
    out: &Path,
    pool: &ProbeSet,
    endpoints: &[&str],
    codec: Option<&Codec>,
) -> Result<PromptTokens, AuditError> {
    let first_refs = match dataset_dirs(out, REFERENCES)?.first() {
        Some(d) => Dataset::open(d)?.records()?,
        None => Vec::new(),
    };
    let billed: BTreeMap<&str, u64> = first_refs
        .iter()
        .filter_map(|r| {
            r.usage
                .as_ref()
                .map(|u| (r.probe_id.as_str(), u.prompt_tokens))
        })
        .collect();
    let Some(codec) = codec else {
        let url = endpoints.first().copied().unwrap_or("");
        return Ok(PromptTokens {
            counted_by: format!("the usage reported by the trusted endpoint {url}"),
            counts: billed.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        });
    };
    let mut counts = BTreeMap::new();
    for p in &pool.probes {
        let ProbeInput::Prompt { text, .. } = &p.input else {
            continue;
        };
        let n = codec.chat_prompt_tokens(text)? as u64;
        if let Some(&served) = billed.get(p.id.as_str()) {
            if served != n && endpoints.is_empty() {
                return Err(AuditError::TokenCountsDiffer {
                    prompt: p.id.clone(),
                    ours: n,
                    billed: served,
                });
            }
        }
        counts.insert(p.id.clone(), n);
    }
    Ok(PromptTokens {
        counted_by: format!(
            "hspi's tokenizer (vocabulary sha256 {}) with the model's chat template, equal to llama-server's usage on every pool prompt",
            &codec.fingerprint().unwrap_or("?")[..12]
        ),
        counts,
    })
}

/// Train the classifier over every reference (and repeats), list the platforms, and seal.
fn finish(
    dir: &Path,
    mut manifest: PackManifest,
    sources: &BTreeMap<String, String>,
    pool: &ProbeSet,
    lines: &Lines,
) -> Result<Pack, AuditError> {
    let references = dataset_dirs(dir, REFERENCES)?;
    let repeats = dataset_dirs(dir, REPEATS)?;
    if sources.len() < 2 {
        return Err(AuditError::TooFewPlatforms {
            dir: dir.display().to_string(),
            count: sources.len(),
        });
    }
    let trained = train_on_shared_probes(TrainOptions {
        datasets: &references,
        out: &dir.join(CLASSIFIER),
        spec: TrainSpec {
            repeats,
            ..TrainSpec::default()
        },
    })?;
    (lines.status)(&trained.summary);
    let in_pool: HashSet<&str> = pool.probes.iter().map(|p| p.id.as_str()).collect();
    let mut platforms: BTreeMap<String, PackPlatform> = BTreeMap::new();
    for d in &references {
        let records: Vec<Record> = Dataset::open(d)?.records()?;
        let rel = format!(
            "{REFERENCES}/{}",
            d.file_name().unwrap_or_default().to_string_lossy()
        );
        for r in &records {
            let Some(p) = &r.platform else { continue };
            let name = p.to_string();
            let entry = platforms
                .entry(name.clone())
                .or_insert_with(|| PackPlatform {
                    platform: name.clone(),
                    source: sources.get(&name).cloned().unwrap_or_default(),
                    probes: 0,
                    datasets: Vec::new(),
                    deterministic: trained
                        .model
                        .classes
                        .iter()
                        .find(|c| c.members.contains(p))
                        .and_then(|c| c.repeats)
                        .map(|r| r.deterministic()),
                });
            if in_pool.contains(r.probe_id.as_str()) {
                entry.probes += 1;
            }
            if !entry.datasets.contains(&rel) {
                entry.datasets.push(rel.clone());
            }
        }
    }
    let prompt = pool.probes.iter().find_map(|p| match &p.input {
        ProbeInput::Prompt { params, .. } => Some(params.clone()),
        _ => None,
    });
    if let Some(p) = prompt {
        manifest.pool.max_tokens = p.max_tokens;
        manifest.pool.top_logprobs = p.top_logprobs;
    }
    manifest.platforms = platforms.into_values().collect();
    Ok(seal(dir, manifest)?)
}

/// Add datasets collected elsewhere (a GPU host, a Slurm shard, the atlas) to the pack in
/// `dir`: each must be of the pack's model, labelled, and share prompts with the pool. With
/// `replace`, a dataset takes the place of the pack's references and repeats of its platform
/// (an engine computed again after a fix) instead of joining them. The pack is rebuilt beside
/// it and swapped in only once sealed.
pub fn merge_into_pack(
    dir: &Path,
    datasets: &[PathBuf],
    repeats: &[PathBuf],
    source: Option<&str>,
    replace: bool,
    command: &str,
    lines: &Lines,
) -> Result<Pack, AuditError> {
    let pack = Pack::open(dir)?;
    let pool = hspi_probe::read_probe_set(&pack.pool_path())?;
    let in_pool: HashSet<&str> = pool.probes.iter().map(|p| p.id.as_str()).collect();
    let work = dir.with_extension("merging");
    let _ = std::fs::remove_dir_all(&work);
    copy_tree(dir, &work, &|_| false)?;
    let mut sources: BTreeMap<String, String> = pack
        .manifest
        .platforms
        .iter()
        .map(|p| (p.platform.clone(), p.source.clone()))
        .collect();
    let skip = |p: &Path| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        name == "journal.jsonl" || name.starts_with("audit.")
    };
    let mut replaced: HashSet<String> = HashSet::new();
    for (sub, list) in [(REFERENCES, datasets), (REPEATS, repeats)] {
        for d in list {
            let data = Dataset::open(d)?;
            let model = &data.manifest.model.id;
            if model != &pack.manifest.model.id {
                return Err(PackError::OtherModel {
                    pack: dir.to_path_buf(),
                    pack_model: pack.manifest.model.id.clone(),
                    asked: format!("{model} (the model of {})", d.display()),
                }
                .into());
            }
            let records = data.records()?;
            if let Some(r) = records.iter().find(|r| r.platform.is_none()) {
                return Err(AuditError::UnlabelledReference {
                    dir: d.display().to_string(),
                    probe: r.probe_id.clone(),
                });
            }
            let shared = records
                .iter()
                .filter(|r| in_pool.contains(r.probe_id.as_str()))
                .count();
            if shared == 0 {
                return Err(AuditError::NoSharedPrompt {
                    dir: d.display().to_string(),
                    pool: pool.probes.len(),
                });
            }
            let platform = records[0].platform_key();
            (lines.status)(&format!(
                "{}: {shared} of its {} answers are to pool prompts ({platform})",
                d.display(),
                records.len()
            ));
            // The pack's own datasets of the platform go once, before the first new one; several
            // new ones of a platform (shards) all stay.
            if replace && sub == REFERENCES && replaced.insert(platform.clone()) {
                for old in [REFERENCES, REPEATS] {
                    for gone in dirs_of_platform(&work, old, &platform)? {
                        (lines.status)(&format!(
                            "replaced: {old}/{} ({platform})",
                            gone.file_name().unwrap_or_default().to_string_lossy()
                        ));
                        std::fs::remove_dir_all(&gone).map_err(AuditError::io(&gone))?;
                    }
                }
                sources.remove(&platform);
            }
            copy_tree(d, &free_dir(&work.join(sub), &platform), &skip)?;
            sources.entry(platform).or_insert_with(|| {
                source.map_or_else(|| format!("merged from {}", d.display()), String::from)
            });
        }
    }
    let _ = std::fs::remove_file(work.join(hspi_pack::MANIFEST));
    let mut manifest = pack.manifest.clone();
    manifest.provenance.push(command.to_string());
    manifest.created_unix = unix_now();
    finish(&work, manifest, &sources, &pool, lines)?;
    let old = dir.with_extension("replaced");
    let _ = std::fs::remove_dir_all(&old);
    std::fs::rename(dir, &old).map_err(AuditError::io(dir))?;
    std::fs::rename(&work, dir).map_err(AuditError::io(dir))?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(Pack::open(dir)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Result<Vec<LocalFormat>, AuditError> {
        local_formats(&w.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn router_words_stand_for_every_format_of_their_family_an_engine_here_computes() {
        use LocalFormat::{Hspi, Llama};
        assert_eq!(
            words(&["int8"]).unwrap(),
            [Llama("q8_0".into()), Hspi(NumericFormat::Int8W8a8)]
        );
        // A provider's spelling of the family, and formats already listed, add nothing twice.
        assert_eq!(
            words(&["w8a8", "q8_0", "int8"]).unwrap(),
            words(&["int8"]).unwrap()
        );
        assert_eq!(
            words(&["fp4"]).unwrap(),
            [
                Hspi(NumericFormat::NvFp4A16),
                Hspi(NumericFormat::NvFp4W4a4),
                Hspi(NumericFormat::MxFp4)
            ]
        );
        assert_eq!(
            words(&["int4", "FP16", "bf16"]).unwrap(),
            [
                Llama("q4_0".into()),
                Hspi(NumericFormat::Int4W4a16 { group: 64 }),
                Llama("f16".into()),
                Hspi(NumericFormat::Bf16)
            ]
        );
        // Exact formats as given: a GGUF file type through llama.cpp, a scheme through hspi.
        assert_eq!(words(&["q5_k_m"]).unwrap(), [Llama("q5_k_m".into())]);
        assert_eq!(
            words(&["int4-w4a16-g128"]).unwrap(),
            [Hspi(NumericFormat::Int4W4a16 { group: 128 })]
        );
        let e = words(&["fp6"]).unwrap_err().to_string();
        assert!(e.contains("no engine here computes a fp6 format"), "{e}");
    }
}
