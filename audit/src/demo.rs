//! The embedded defaults end to end, with no network and no download: the CNN over the CPU grid
//! and its EQCs, then the tiny LM served on loopback, collected from over HTTP, and audited.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hspi_classify::linear::TrainParams;
use hspi_classify::verify::{Verdict, VerifyParams};
use hspi_collect::http::BudgetLimits;
use hspi_collect::session::{collect_local, EndpointOptions, EndpointSession, LocalCollection};
use hspi_collect::{grid, serve, zoo::TinyLm, Model, ModelId, NoProgress};
use hspi_datasets::{Dataset, NumericFormat, OpenMode, Outputs, Platform};
use hspi_reports::report::Evidence;

use crate::error::AuditError;
use crate::setup::VerifySetup;
use crate::{audit_endpoint, train, Lines, TrainOptions, TrainSpec};

pub struct DemoOptions {
    /// Where the demo's datasets are kept (None: a fresh directory under the system's temp).
    pub out: Option<PathBuf>,
    /// Seeded random probes for the CNN grid.
    pub probes: usize,
    /// The command line, for the datasets' session records.
    pub command: String,
}

pub fn demo(o: &DemoOptions, lines: &Lines) -> Result<(), AuditError> {
    let out = o
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("hspi-demo-{}", std::process::id())));
    let cnn = out.join("cnn");
    (lines.status)(&format!(
        "hspi demo 1/3: the embedded digits CNN on every CPU platform of the default grid, {} probes",
        o.probes
    ));
    let model = Model::load(ModelId::CnnDigits, None)?;
    let platforms = grid::default_grid(model.id());
    let probes = hspi_probe::for_model(&model, &o.probes.to_string(), 1)?;
    let done = collect_local(
        LocalCollection {
            model: &model,
            platforms: &platforms,
            probes: &probes,
            out: &cnn,
            mode: OpenMode::Force,
            command: &o.command,
            emulate: None,
        },
        &NoProgress,
    )?;
    (lines.status)(&done.to_string());
    let grouping = hspi_classify::group_eqcs(&Dataset::open(&cnn)?.records()?)?;
    (lines.data)(&hspi_reports::eqc_table::render_text(&grouping));
    demo_audit(o, &out, lines)?;
    (lines.status)(&format!(
        "datasets kept in {} (try `hspi eqc {}` or `hspi dataset export {} --format csv --out records.csv`)",
        out.display(),
        cnn.display(),
        cnn.display()
    ));
    Ok(())
}

fn endpoint(url: &str, label: Option<&Platform>, concurrency: usize) -> EndpointOptions {
    EndpointOptions {
        url: url.to_string(),
        api: None,
        model: "tiny-lm".into(),
        label: label.cloned(),
        api_key: None,
        concurrency,
        rate_limit: None,
        timeout: Duration::from_secs(60),
        retries: 2,
        budget: BudgetLimits::default(),
        journal: None,
        text_only: false,
        allow_model_mismatch: false,
        strict_openai: false,
    }
}

/// Collect `probes` (a count of seeded prompts, or a probe-set file) from the tiny LM served at
/// `url` into `dir`, labelled when it is a reference.
fn collect_from(
    url: &str,
    probes: &str,
    seed: u64,
    dir: &Path,
    label: Option<&Platform>,
    command: &str,
) -> Result<(), AuditError> {
    let set = hspi_probe::prompts_for(probes, seed, 8, 5)?;
    let session =
        EndpointSession::open(&endpoint(url, label, 2), set, dir, OpenMode::Force, command)?;
    session.collect(&NoProgress).0?;
    Ok(())
}

/// Parts 2 and 3: a "provider" serves the tiny LM at bf16 on loopback; hspi recomputes prompts on
/// its own servers at every format, trains a classifier, and audits the provider against a
/// false claim (f32) and the true one (bf16).
fn demo_audit(o: &DemoOptions, out: &Path, lines: &Lines) -> Result<(), AuditError> {
    let grid = grid::default_grid(ModelId::TinyLm);
    let bf16 = grid
        .iter()
        .find(|p| p.format == NumericFormat::Bf16)
        .expect("the tiny LM grid has bf16")
        .clone();
    let provider = serve::start(Model::Tiny(TinyLm::embedded()), &bf16, "127.0.0.1:0")?;
    let url = format!("{}/chat/completions", provider.base_url());
    (lines.status)(&format!(
        "hspi demo 2/3: a provider serves the embedded tiny LM at {bf16} on {}; collecting 8 prompts over HTTP",
        provider.base_url()
    ));
    let served = out.join("served");
    collect_from(&url, "8", 1, &served, None, &o.command)?;
    let records = Dataset::open(&served)?.records()?;
    let (mut steps, mut exact) = (0, 0);
    for r in &records {
        if let Outputs::Completion { steps: s, .. } = &r.outputs {
            steps += s.len();
            exact += s
                .iter()
                .filter(|s| s.logprob.as_ref().is_some_and(|l| l.exact_f32))
                .count();
        }
    }
    (lines.data)(&format!(
        "{} completions from {url}: {steps} generated tokens with top-5 logprobs, {exact} of them exact f32 bit patterns",
        records.len()
    ));

    (lines.status)(&format!(
        "hspi demo 3/3: hspi serves the tiny LM itself at {} platforms, trains a classifier on 24 prompts, and audits the provider",
        grid.len()
    ));
    let audit_prompts = out.join("audit-prompts.json");
    hspi_probe::write_probe_set(&audit_prompts, &hspi_probe::prompts(2, 12, 8, 5))?;
    let audit_prompts = audit_prompts.display().to_string();
    let (mut train_dirs, mut reference_dirs) = (Vec::new(), Vec::new());
    for p in &grid {
        let own = serve::start(Model::Tiny(TinyLm::embedded()), p, "127.0.0.1:0")?;
        let own_url = format!("{}/chat/completions", own.base_url());
        let name = p.format.to_string();
        let train_dir = out.join(format!("train-{name}"));
        collect_from(&own_url, "24", 1, &train_dir, Some(p), &o.command)?;
        let reference = out.join(format!("reference-{name}"));
        collect_from(&own_url, &audit_prompts, 2, &reference, Some(p), &o.command)?;
        train_dirs.push(train_dir);
        reference_dirs.push(reference);
    }
    let classifier = out.join("classifier.json");
    let trained = train(TrainOptions {
        datasets: &train_dirs,
        out: &classifier,
        spec: TrainSpec {
            params: TrainParams {
                folds: 4,
                alphas: vec![0.1, 1.0, 10.0],
                ..TrainParams::default()
            },
            ..TrainSpec::default()
        },
    })?;
    (lines.status)(&trained.summary);
    for claim in ["*/candle/f32/*", "*/candle/bf16/*"] {
        let params = VerifyParams {
            max_queries: 12,
            max_output_tokens: 96,
            ..VerifyParams::default()
        };
        let setup = VerifySetup::load(claim, &classifier, &reference_dirs, params)?;
        let dir = out.join(format!(
            "audit-{}",
            claim.split('/').nth(2).unwrap_or("claim")
        ));
        let set = hspi_probe::prompts_for(&audit_prompts, 1, 8, 5)?;
        let session = EndpointSession::open(
            &endpoint(&url, None, 1),
            set,
            &dir,
            OpenMode::Force,
            &o.command,
        )?;
        let audit = audit_endpoint(&setup, session, "tiny-lm", lines)?;
        let Evidence::Audit { verification, .. } = &audit.evidence else {
            unreachable!("audit_endpoint writes audit reports")
        };
        let detail = match &verification.verdict {
            Verdict::Mismatch {
                likely_platform, ..
            } => format!(" — most likely serving {likely_platform}"),
            _ => String::new(),
        };
        (lines.data)(&format!(
            "audit of {url} claiming {claim}: {}{detail} (confidence {:.2}, {} queries, {} output tokens)",
            verification.verdict.name(),
            verification.confidence,
            audit.spent.requests,
            audit.spent.output_tokens
        ));
    }
    Ok(())
}
