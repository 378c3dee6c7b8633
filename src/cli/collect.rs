use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use hspi_collect::{collect, grid, open_local, Model, ModelId, PendingTarget};
use hspi_datasets::{
    manifest::unix_now, DatasetWriter, HostProvenance, Manifest, OpenMode, Platform, ProbeInput,
    ProbeSet, ProbeSetInfo, Session, SCHEMA_VERSION,
};

use crate::printer;
use crate::progress::Bar;

/// Token ids drawn for random language-model probes, and their length.
const LM_VOCAB: u32 = 49152;
const LM_PROBE_TOKENS: usize = 12;

#[derive(Debug, Default, clap::Args)]
pub struct Args {
    /// Local: cnn-digits or tiny-lm (embedded), or smollm2 (after `hspi fetch smollm2`).
    /// With --endpoint: the model name to ask the endpoint for.
    #[arg(long, default_value = "cnn-digits")]
    pub model: String,
    /// Comma-separated platform strings and groups: `default` (the CPU grid), `candle` (its candle
    /// platforms), `cuda` (every cuBLAS precision and batch size on each GPU here).
    #[arg(long, default_value = "default")]
    pub platforms: String,
    /// A number of seeded random probes, or a probe-set file from `hspi probe`.
    #[arg(long, default_value = "200")]
    pub probes: String,
    /// Seed for generated probes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Weights file instead of the embedded or cached one.
    #[arg(long)]
    pub weights: Option<PathBuf>,
    /// Output dataset directory.
    #[arg(
        long,
        required_unless_present = "plan",
        default_value = ".",
        hide_default_value = true
    )]
    pub out: PathBuf,
    /// Collect one shard of an atlas plan (`hspi atlas plan`) into the plan's shard directory,
    /// resuming what is there; --model, --platforms, --probes and --out come from the plan.
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// The shard to collect (default: $SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX).
    #[arg(long, requires = "plan")]
    pub shard: Option<usize>,
    /// Continue an interrupted collection in --out.
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Replace --out if it exists.
    #[arg(long)]
    pub force: bool,
    /// Print a JSON summary on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub endpoint: super::collect_http::EndpointArgs,
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    if let Some(plan) = args.plan.clone() {
        super::atlas::apply_shard(&plan, args.shard, &mut args)?;
    }
    if args.endpoint.endpoint.is_some() {
        return super::collect_http::run(&args);
    }
    let summary = collect_local(&args)?;
    if args.json {
        printer::data(&serde_json::to_string_pretty(&summary)?);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, serde::Serialize)]
pub struct Summary {
    pub out: PathBuf,
    pub platforms: usize,
    pub probes: usize,
    pub written: usize,
    pub already_done: usize,
}

pub fn probe_set_for(model: &Model, spec: &str, seed: u64) -> anyhow::Result<ProbeSet> {
    let set = match spec.parse::<usize>() {
        Ok(0) => bail!("--probes 0: at least one probe is needed"),
        Ok(n) => match model {
            Model::Image(m) => hspi_probe::random_images(seed, n, m.input_shape),
            Model::Lm { .. } => hspi_probe::random_tokens(seed, n, LM_VOCAB, LM_PROBE_TOKENS),
            Model::Tiny(lm) => {
                hspi_probe::random_tokens(seed, n, lm.vocab.len() as u32, LM_PROBE_TOKENS)
            }
        },
        Err(_) => hspi_probe::read_probe_set(Path::new(spec))?,
    };
    for p in &set.probes {
        let fits = match (&p.input, model) {
            (ProbeInput::Image { pixels, .. }, Model::Image(m)) => pixels.len() == m.input_len(),
            (ProbeInput::Tokens { ids }, Model::Lm { .. }) => !ids.is_empty(),
            (ProbeInput::Tokens { ids }, Model::Tiny(lm)) => {
                !ids.is_empty() && ids.iter().all(|i| (*i as usize) < lm.vocab.len())
            }
            _ => false,
        };
        if !fits {
            bail!(
                "probe {} in {spec} does not fit model {}\nhint: generate probes for this model with `hspi probe random --model {}`",
                p.id,
                model.info().id,
                model.info().id
            );
        }
    }
    Ok(set)
}

pub fn open_mode(args: &Args) -> OpenMode {
    match (args.resume, args.force) {
        (true, _) => OpenMode::Resume,
        (_, true) => OpenMode::Force,
        _ => OpenMode::Create,
    }
}

pub fn new_session() -> Session {
    Session {
        started_unix: unix_now(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        provenance: HostProvenance::detect(hspi_collect::engine_versions()),
    }
}

pub fn probe_set_info(probes: &ProbeSet) -> ProbeSetInfo {
    ProbeSetInfo {
        hash: probes.hash(),
        count: probes.probes.len(),
        generator: probes.generator.clone(),
        seed: probes.seed,
    }
}

pub fn collect_local(args: &Args) -> anyhow::Result<Summary> {
    let model = Model::load(ModelId::parse(&args.model)?, args.weights.as_deref())?;
    if matches!(model, Model::Image(_)) {
        hspi_collect::backend::prefer_single_threaded_kernels();
    }
    let info = model.info();
    let platforms = grid::parse_platforms(&args.platforms, &model)?;
    if grid::names_cuda_group(&args.platforms) && !platforms.iter().any(Platform::is_cuda) {
        return Err(hspi_collect::CollectError::NoCudaDriver.into());
    }
    if platforms.is_empty() {
        bail!("--platforms '{}' names no platform", args.platforms);
    }
    for p in &platforms {
        hspi_collect::check_local(&model, p)?;
    }
    let probes = probe_set_for(&model, &args.probes, args.seed)?;
    let manifest = Manifest {
        schema_version: SCHEMA_VERSION,
        created_unix: unix_now(),
        model: info.clone(),
        probe_set: probe_set_info(&probes),
        platforms: platforms.clone(),
        sessions: Vec::new(),
    };
    let mut session = new_session();
    if platforms.iter().any(Platform::is_cuda) {
        session.provenance.gpus = hspi_collect::backend::cuda_devices();
    }
    let mut writer = DatasetWriter::open(&args.out, &manifest, &probes, session, open_mode(args))?;
    let targets: Vec<PendingTarget> = platforms
        .iter()
        .map(|p| PendingTarget {
            id: hspi_collect::local_target_id(&info.id, p),
            platform: Some(p.clone()),
            open: Box::new(|| open_local(&model, p)),
        })
        .collect();
    let result = collect(&mut writer, &targets, &probes, &Bar::new());
    // Seal what was written even when a target failed: nothing acknowledged is lost.
    writer
        .finish()
        .with_context(|| format!("sealing {}", args.out.display()))?;
    let done = result?;
    printer::status(&format!(
        "collected {} records ({} already present) from {} platforms × {} probes into {}",
        done.written,
        done.already_done,
        platforms.len(),
        probes.probes.len(),
        args.out.display()
    ));
    Ok(Summary {
        out: args.out.clone(),
        platforms: platforms.len(),
        probes: probes.probes.len(),
        written: done.written,
        already_done: done.already_done,
    })
}
