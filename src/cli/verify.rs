//! `hspi verify`: is a target serving the claimed platform? Sequential, budget-aware, over an
//! endpoint (queried one probe at a time, every answer stored) or over a collected dataset.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use hspi_classify::claim::Claim;
use hspi_classify::verify::{Verifier, VerifyParams, VerifyReport};
use hspi_classify::{PlatformModel, ReferenceIndex};
use hspi_collect::Target;
use hspi_datasets::{Record, Served};

use super::classifier::{load, load_references};
use super::collect_http::open_endpoint;
use crate::printer;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The claimed platform; any part may be open: */llamacpp/f16/*.
    #[arg(long)]
    pub claim: String,
    /// A classifier written by `hspi train` (its classes are the claim's alternatives).
    #[arg(long)]
    pub classifier: PathBuf,
    /// hspi's own answers to the probes on the classifier's reference platforms.
    #[arg(long, num_args = 1..)]
    pub references: Vec<PathBuf>,
    /// Target probability of calling an honest server a mismatch.
    #[arg(long, default_value_t = 0.01)]
    pub false_accusation: f64,
    /// Target probability of calling a mismatched server consistent.
    #[arg(long, default_value_t = 0.01)]
    pub false_acceptance: f64,
    /// Stop (inconclusive) after this many queries.
    #[arg(long, default_value_t = 32)]
    pub max_queries: usize,
    /// Stop (inconclusive) before the answers' output tokens exceed this.
    #[arg(long, default_value_t = 256)]
    pub max_tokens_total: u64,
    /// Also write the report model (JSON, for `hspi report`) to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// The reference knowledge behind a verdict, for reports.
pub fn atlas(s: &Setup, v: &VerifyArgs) -> hspi_reports::report::Atlas {
    hspi_reports::report::Atlas::new(Some(s.model.id.clone()), &s.model.classes, &v.references)
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Datasets of the target's answers (omit with --endpoint).
    pub datasets: Vec<PathBuf>,
    #[command(flatten)]
    pub verify: VerifyArgs,
    #[command(flatten)]
    pub target: EndpointTarget,
}

/// The endpoint side of `verify` and `audit`: where to send probes and where to keep answers.
#[derive(Debug, clap::Args)]
pub struct EndpointTarget {
    #[command(flatten)]
    pub endpoint: super::collect_http::EndpointArgs,
    /// The model name to request from the endpoint.
    #[arg(long, default_value = "")]
    pub model: String,
    /// Probe-set file of prompts (`hspi probe prompts`), the same the references answered.
    #[arg(long, default_value = "")]
    pub probes: String,
    /// Dataset directory for every answer received (kept whatever the verdict).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace an existing --out dataset.
    #[arg(long)]
    pub force: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl EndpointTarget {
    pub fn collect_args(&self) -> anyhow::Result<super::collect::Args> {
        let Some(out) = &self.out else {
            bail!("--endpoint needs --out DIR: every answer is stored, whatever the verdict");
        };
        if self.model.is_empty() || self.probes.is_empty() {
            bail!(
                "--endpoint needs --model NAME and --probes FILE (prompts the references answered)"
            );
        }
        Ok(super::collect::Args {
            model: self.model.clone(),
            probes: self.probes.clone(),
            out: out.clone(),
            force: self.force,
            endpoint: self.endpoint.clone(),
            ..Default::default()
        })
    }
}

impl VerifyArgs {
    pub fn params(&self) -> VerifyParams {
        VerifyParams {
            false_accusation: self.false_accusation,
            false_acceptance: self.false_acceptance,
            max_queries: self.max_queries,
            max_output_tokens: self.max_tokens_total,
            ..VerifyParams::default()
        }
    }
}

/// The classifier, the reference index and the parsed claim.
pub struct Setup {
    pub model: PlatformModel,
    pub references: ReferenceIndex,
    pub claim: Claim,
}

pub fn setup(v: &VerifyArgs) -> anyhow::Result<Setup> {
    let claim: Claim = v
        .claim
        .parse()
        .map_err(anyhow::Error::msg)
        .context("--claim")?;
    let model = PlatformModel::load(&v.classifier)?;
    let references = ReferenceIndex::new(&load_references(&v.references)?);
    Ok(Setup {
        model,
        references,
        claim,
    })
}

/// Query the endpoint probe by probe in the verifier's order, storing every answer, until a
/// verdict or the budget. Returns the report and every record collected.
pub fn verify_endpoint(
    s: &Setup,
    v: &VerifyArgs,
    c: &super::collect::Args,
) -> anyhow::Result<(VerifyReport, Vec<Record>, hspi_reports::report::Spent)> {
    let mut session = open_endpoint(c)?;
    if !s.model.model.id.eq_ignore_ascii_case(&c.model) {
        printer::status(&format!(
            "note: the classifier describes model {}, the endpoint is asked for {}",
            s.model.model.id, c.model
        ));
    }
    let mut verifier = Verifier::new(&s.model, &s.references, s.claim.clone(), v.params())?;
    let ids: Vec<String> = session.probes.probes.iter().map(|p| p.id.clone()).collect();
    let order = verifier.order_probes(&ids);
    let mut records = Vec::new();
    for id in order {
        let probe = session
            .probes
            .probes
            .iter()
            .find(|p| p.id == id)
            .expect("ordered ids come from the probe set");
        let max_tokens = match &probe.input {
            hspi_datasets::ProbeInput::Prompt { params, .. } => u64::from(params.max_tokens),
            _ => 0,
        };
        if !verifier.can_continue(max_tokens) {
            break;
        }
        let started = std::time::Instant::now();
        let answer = session
            .target
            .answer(&[probe])
            .map_err(anyhow::Error::from)?
            .pop()
            .context("the endpoint returned no answer")?;
        let record = Record {
            probe_id: probe.id.clone(),
            target: session.id.clone(),
            platform: session.label.clone(),
            outputs: answer.outputs,
            timing_us: started.elapsed().as_micros() as u64,
            usage: answer.usage,
            served: Served::from_answer(answer.served_model, answer.system_fingerprint),
        };
        if !session.writer.is_done(&session.id, &record.probe_id) {
            session.writer.append(std::slice::from_ref(&record))?;
        }
        let spent = session.budget.spent();
        let verdict = verifier.observe(&record).map(|v| v.name().to_string());
        printer::status(&format!(
            "query {}: probe {} → llr {:+.2}{}; spent {} requests, {} output tokens, cost {:.6}",
            records.len() + 1,
            &record.probe_id[..record.probe_id.len().min(12)],
            verifier_llr(&verifier),
            verdict.map_or(String::new(), |v| format!(" ({v})")),
            spent.requests,
            spent.output_tokens,
            spent.cost
        ));
        records.push(record);
    }
    session.writer.finish()?;
    let spent = session.budget.spent();
    let spent = hspi_reports::report::Spent {
        queries: records.len() as u64,
        requests: spent.requests,
        output_tokens: spent.output_tokens,
        cost: spent.cost,
    };
    Ok((verifier.finish(), records, spent))
}

fn verifier_llr(v: &Verifier) -> f64 {
    v.current_llr()
}

pub fn verify_records(
    s: &Setup,
    v: &VerifyArgs,
    records: &[Record],
) -> anyhow::Result<VerifyReport> {
    let mut targets: Vec<&str> = records.iter().map(|r| r.target.as_str()).collect();
    targets.sort_unstable();
    targets.dedup();
    if targets.len() > 1 {
        bail!(
            "the datasets hold {} targets ({}): verify one target at a time",
            targets.len(),
            targets.join(", ")
        );
    }
    let mut verifier = Verifier::new(&s.model, &s.references, s.claim.clone(), v.params())?;
    let ids: Vec<String> = records.iter().map(|r| r.probe_id.clone()).collect();
    for id in verifier.order_probes(&ids) {
        let r = records
            .iter()
            .find(|r| r.probe_id == id)
            .expect("id from the records");
        if !verifier.can_continue(hspi_classify::identify::output_tokens(r)) {
            break;
        }
        verifier.observe(r);
    }
    Ok(verifier.finish())
}

pub fn render_text(r: &VerifyReport) -> String {
    let mut s = format!(
        "claim: {} ({})\nverdict: {}",
        r.claim,
        r.claimed.join(", "),
        r.verdict.name()
    );
    match &r.verdict {
        hspi_classify::verify::Verdict::Mismatch {
            likely_platform, ..
        } => s.push_str(&format!(" — most likely serving {likely_platform}")),
        hspi_classify::verify::Verdict::UnknownPlatform { reason }
        | hspi_classify::verify::Verdict::Inconclusive { reason }
        | hspi_classify::verify::Verdict::Tampered { reason } => {
            s.push_str(&format!(" — {reason}"))
        }
        hspi_classify::verify::Verdict::Consistent => {}
    }
    s.push_str(&format!(
        "\nconfidence: {:.3}; log-likelihood ratio {:.2} (mismatch at ≥ {:.2}, consistent at ≤ {:.2})\nevidence: {} queries, {} output tokens\n",
        r.confidence, r.log_likelihood_ratio, r.thresholds.0, r.thresholds.1, r.queries, r.output_tokens
    ));
    for e in &r.evidence {
        s.push_str(&format!(
            "  {} {:>16} llr {:+.2} (total {:+.2}) nearest {}{}\n",
            &e.probe[..e.probe.len().min(12)],
            e.method,
            e.llr,
            e.cumulative_llr,
            e.nearest,
            if e.integrity.is_empty() {
                String::new()
            } else {
                format!(" ALTERED: {}", e.integrity.join("; "))
            }
        ));
    }
    s
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let s = setup(&args.verify)?;
    let (report, subject, spent) = if args.target.endpoint.endpoint.is_some() {
        let (report, _, spent) = verify_endpoint(&s, &args.verify, &args.target.collect_args()?)?;
        let subject = hspi_reports::report::Subject {
            endpoint: args.target.endpoint.endpoint.clone(),
            model: args.target.model.clone(),
            claim: Some(report.claim.clone()),
        };
        (report, subject, spent)
    } else {
        if args.datasets.is_empty() {
            bail!("nothing to verify: give datasets of the target's answers, or --endpoint URL --model NAME --probes FILE --out DIR");
        }
        let data = load(&args.datasets)?;
        let all: Vec<&Record> = data.records.iter().collect();
        s.model.check_compatible(&data.model, &all)?;
        let report = verify_records(&s, &args.verify, &data.records)?;
        let subject = hspi_reports::report::Subject {
            endpoint: data.records.first().map(|r| r.target.clone()),
            model: data.model.id.clone(),
            claim: Some(report.claim.clone()),
        };
        let spent = hspi_reports::report::Spent {
            queries: report.queries as u64,
            requests: report.queries as u64,
            output_tokens: report.output_tokens,
            cost: 0.0,
        };
        (report, subject, spent)
    };
    if let Some(path) = &args.verify.report {
        let ctx = hspi_reports::report::Context::now(subject, spent, atlas(&s, &args.verify));
        let r = hspi_reports::report::Report::from_verify(ctx, report.clone());
        std::fs::write(path, hspi_reports::json::render(&r))
            .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    printer::data(&if args.target.json {
        serde_json::to_string_pretty(&report)?
    } else {
        render_text(&report)
    });
    Ok(ExitCode::from(report.verdict.exit_code()))
}
