use std::path::{Path, PathBuf};
use std::process::ExitCode;

use hspi_collect::{grid, serve, zoo::TinyLm};
use hspi_datasets::{Dataset, NumericFormat, Outputs, Platform};

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to keep the demo datasets (default: a fresh directory under the system temp dir).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Number of seeded random probes for the CNN grid.
    #[arg(long, default_value_t = 64)]
    probes: usize,
}

/// The embedded defaults end to end, with no network and no download: the CNN over the CPU grid
/// and its EQCs, then the tiny LM served on loopback and collected from over HTTP.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let out = args
        .out
        .unwrap_or_else(|| std::env::temp_dir().join(format!("hspi-demo-{}", std::process::id())));
    let cnn = out.join("cnn");
    printer::status(&format!(
        "hspi demo 1/3: the embedded digits CNN on every CPU platform of the default grid, {} probes",
        args.probes
    ));
    let collect_args = super::collect::Args {
        model: "cnn-digits".into(),
        platforms: "default".into(),
        probes: args.probes.to_string(),
        seed: 1,
        out: cnn.clone(),
        force: true,
        ..Default::default()
    };
    super::collect::collect_local(&collect_args)?;
    let grouping = hspi_classify::group_eqcs(&Dataset::open(&cnn)?.records()?)?;
    printer::data(&hspi_reports::eqc_table::render_text(&grouping));

    demo_audit(&out)?;
    printer::status(&format!(
        "datasets kept in {} (try `hspi eqc {}` or `hspi dataset export {} --format csv --out records.csv`)",
        out.display(),
        cnn.display(),
        cnn.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// Collect `probes` from the tiny LM served at `url` into `dir`, labelled when it is a reference.
fn collect_from(
    url: &str,
    probes: &str,
    seed: u64,
    dir: &Path,
    label: Option<&Platform>,
) -> anyhow::Result<()> {
    let mut args = super::collect::Args {
        model: "tiny-lm".into(),
        probes: probes.into(),
        seed,
        out: dir.to_path_buf(),
        force: true,
        ..Default::default()
    };
    args.endpoint.endpoint = Some(url.to_string());
    args.endpoint.label = label.map(ToString::to_string);
    args.endpoint.concurrency = 2;
    args.endpoint.max_tokens = 8;
    args.endpoint.top_logprobs = 5;
    args.endpoint.timeout = 60.0;
    args.endpoint.retries = 2;
    match super::collect_http::run(&args)? {
        c if c == std::process::ExitCode::SUCCESS => Ok(()),
        _ => anyhow::bail!("collecting from {url} stopped early"),
    }
}

/// Parts 2 and 3: a "provider" serves the tiny LM at bf16 on loopback; hspi recomputes prompts on
/// its own servers at every format, trains a classifier, and audits the provider against a
/// false claim (f32) and the true one (bf16).
fn demo_audit(out: &Path) -> anyhow::Result<()> {
    let grid = grid::tiny_lm_grid();
    let bf16 = grid
        .iter()
        .find(|p| p.format == NumericFormat::Bf16)
        .expect("the tiny LM grid has bf16")
        .clone();
    let provider = serve::start(TinyLm::embedded(), &bf16, "127.0.0.1:0")?;
    let url = format!("{}/chat/completions", provider.base_url());
    printer::status(&format!(
        "hspi demo 2/3: a provider serves the embedded tiny LM at {bf16} on {}; collecting 8 prompts over HTTP",
        provider.base_url()
    ));
    let served = out.join("served");
    collect_from(&url, "8", 1, &served, None)?;
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
    printer::data(&format!(
        "{} completions from {url}: {steps} generated tokens with top-5 logprobs, {exact} of them exact f32 bit patterns",
        records.len()
    ));

    printer::status(&format!(
        "hspi demo 3/3: hspi serves the tiny LM itself at {} platforms, trains a classifier on 24 prompts, and audits the provider",
        grid.len()
    ));
    let audit_prompts = out.join("audit-prompts.json");
    hspi_probe::write_probe_set(&audit_prompts, &hspi_probe::prompts(2, 12, 8, 5))?;
    let (mut train_dirs, mut reference_dirs) = (Vec::new(), Vec::new());
    for p in &grid {
        let own = serve::start(TinyLm::embedded(), p, "127.0.0.1:0")?;
        let own_url = format!("{}/chat/completions", own.base_url());
        let name = p.format.to_string();
        let train = out.join(format!("train-{name}"));
        collect_from(&own_url, "24", 1, &train, Some(p))?;
        let reference = out.join(format!("reference-{name}"));
        collect_from(
            &own_url,
            audit_prompts.to_str().unwrap_or_default(),
            2,
            &reference,
            Some(p),
        )?;
        train_dirs.push(train);
        reference_dirs.push(reference);
    }
    let classifier = out.join("classifier.json");
    super::train::run(super::train::Args {
        datasets: train_dirs,
        out: classifier.clone(),
        features: super::classifier::FeatureArgs {
            features: None,
            references: Vec::new(),
            reference_platforms: None,
            folds: 4,
            alphas: "0.1,1,10".into(),
        },
    })?;
    for claim in ["*/candle/f32/*", "*/candle/bf16/*"] {
        let v = super::verify::VerifyArgs {
            claim: claim.into(),
            classifier: classifier.clone(),
            references: reference_dirs.clone(),
            false_accusation: 0.01,
            false_acceptance: 0.01,
            max_queries: 12,
            max_tokens_total: 96,
            report: None,
        };
        let target = super::verify::EndpointTarget {
            endpoint: super::collect_http::EndpointArgs {
                endpoint: Some(url.clone()),
                timeout: 60.0,
                retries: 2,
                concurrency: 1,
                ..Default::default()
            },
            model: "tiny-lm".into(),
            probes: audit_prompts.to_str().unwrap_or_default().into(),
            out: Some(out.join(format!(
                "audit-{}",
                claim.split('/').nth(2).unwrap_or("claim")
            ))),
            force: true,
            json: false,
        };
        let audit = super::audit::audit_endpoint(&v, &target)?;
        let hspi_reports::report::Evidence::Audit {
            verification: report,
            ..
        } = &audit.evidence
        else {
            unreachable!("audit_endpoint writes audit reports")
        };
        let spent = &audit.spent;
        let detail = match &report.verdict {
            hspi_classify::verify::Verdict::Mismatch {
                likely_platform, ..
            } => {
                format!(" — most likely serving {likely_platform}")
            }
            _ => String::new(),
        };
        printer::data(&format!(
            "audit of {url} claiming {claim}: {}{detail} (confidence {:.2}, {} queries, {} output tokens)",
            report.verdict.name(),
            report.confidence,
            spent.requests,
            spent.output_tokens
        ));
    }
    Ok(())
}
