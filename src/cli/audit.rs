//! `hspi audit`: verify a claim against an endpoint, identify what it serves from the same
//! answers, and write the report (JSON, Markdown, HTML) next to the answers' dataset.

use std::process::ExitCode;

use hspi_reports::report::{Context, Report, Subject};

use super::verify::{setup, verify_endpoint, EndpointTarget, VerifyArgs};
use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub verify: VerifyArgs,
    #[command(flatten)]
    pub target: EndpointTarget,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let report = audit_endpoint(&args.verify, &args.target)?;
    printer::data(&if args.target.json {
        hspi_reports::json::render(&report)
    } else {
        hspi_reports::markdown::render(&report)
    });
    Ok(ExitCode::from(report_exit(&report)))
}

/// Verify + identify against the endpoint, and write audit.json, audit.md and audit.html into
/// the answers' dataset directory.
pub fn audit_endpoint(v: &VerifyArgs, target: &EndpointTarget) -> anyhow::Result<Report> {
    if target.endpoint.endpoint.is_none() {
        anyhow::bail!(
            "hspi audit needs --endpoint URL (to audit a collected dataset, use `hspi verify DIR`)"
        );
    }
    let s = setup(v)?;
    let collect = target.collect_args()?;
    let (verification, records, spent) = verify_endpoint(&s, v, &collect)?;
    let refs: Vec<&hspi_datasets::Record> = records.iter().collect();
    let identification = s.model.identify(&refs, &s.references);
    let subject = Subject {
        endpoint: collect.endpoint.endpoint.clone(),
        model: collect.model.clone(),
        claim: Some(verification.claim.clone()),
    };
    let ctx = Context::now(subject, spent, super::verify::atlas(&s, v));
    let report = Report::from_audit(
        ctx,
        verification,
        identification,
        collect.out.display().to_string(),
    );
    for name in ["json", "md", "html"] {
        let e = hspi_reports::exporter(name)?;
        std::fs::write(
            collect.out.join(format!("audit.{}", e.extension())),
            e.render(&report),
        )?;
    }
    printer::status(&format!(
        "audit written to {dir}/audit.json, audit.md and audit.html (PDF: hspi report --from {dir}/audit.json --format pdf --out audit.pdf)",
        dir = collect.out.display()
    ));
    Ok(report)
}

pub fn report_exit(r: &Report) -> u8 {
    match &r.evidence {
        hspi_reports::report::Evidence::Audit { verification, .. }
        | hspi_reports::report::Evidence::Verify { verification } => {
            verification.verdict.exit_code()
        }
        _ => 0,
    }
}
