//! `hspi verify`: is a target serving the claimed platform? Sequential, budget-aware, over an
//! endpoint (queried one probe at a time, every answer stored) or over a collected dataset.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use hspi_classify::audit::SourceError;
use hspi_classify::verify::{Verifier, VerifyParams, VerifyReport};
use hspi_classify::{run_audit, AnswerSource, PlatformModel, RecordSource, ReferenceIndex};
use hspi_collect::session::EndpointSession;
use hspi_datasets::{short_id, PlatformPattern, Record};

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
    pub claim: PlatformPattern,
}

pub fn setup(v: &VerifyArgs) -> anyhow::Result<Setup> {
    let claim: PlatformPattern = v.claim.parse().context("--claim")?;
    let model = PlatformModel::load(&v.classifier)?;
    let references = ReferenceIndex::new(&load_references(&v.references)?);
    Ok(Setup {
        model,
        references,
        claim,
    })
}

/// The endpoint as the audit loop's answer source: each answer stored before it is weighed.
struct Endpoint<'s>(&'s mut EndpointSession);

impl AnswerSource for Endpoint<'_> {
    fn probes(&self) -> Vec<(String, u64)> {
        let s = &*self.0;
        s.probes
            .probes
            .iter()
            .map(|p| (p.id.clone(), s.max_tokens(&p.id)))
            .collect()
    }
    fn ask(&mut self, probe_id: &str) -> Result<Record, SourceError> {
        Ok(self.0.ask(probe_id)?)
    }
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
    let verifier = Verifier::new(&s.model, &s.references, s.claim.clone(), v.params())?;
    let budget = session.budget.clone();
    let mut queries = 0;
    let outcome = run_audit(
        verifier,
        &mut Endpoint(&mut session),
        &mut |record, verifier| {
            queries += 1;
            let spent = budget.spent();
            let verdict = verifier.verdict().map(|v| format!(" ({})", v.name()));
            printer::status(&format!(
            "query {queries}: probe {} → llr {:+.2}{}; spent {} requests, {} output tokens, cost {:.6}",
            short_id(&record.probe_id),
            verifier.current_llr(),
            verdict.unwrap_or_default(),
            spent.requests,
            spent.output_tokens,
            spent.cost
        ));
            Ok(())
        },
    )?;
    let spent = session.finish()?;
    let spent = hspi_reports::report::Spent {
        queries: outcome.records.len() as u64,
        requests: spent.requests,
        output_tokens: spent.output_tokens,
        cost: spent.cost,
    };
    Ok((outcome.report, outcome.records, spent))
}

pub fn verify_records(
    s: &Setup,
    v: &VerifyArgs,
    records: &[Record],
) -> anyhow::Result<VerifyReport> {
    let mut source = RecordSource::new(records)?;
    let verifier = Verifier::new(&s.model, &s.references, s.claim.clone(), v.params())?;
    Ok(run_audit(verifier, &mut source, &mut |_, _| Ok(()))?.report)
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
        hspi_reports::verification_table::text(&report)
    });
    Ok(ExitCode::from(report.verdict.exit_code()))
}
