//! `hspi audit`: verify a claim against an endpoint, identify what it serves from the same
//! answers, and write the report (JSON and Markdown) next to the answers' dataset.

use std::process::ExitCode;

use hspi_reports::audit_report::AuditReport;

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
    if args.target.endpoint.endpoint.is_none() {
        anyhow::bail!(
            "hspi audit needs --endpoint URL (to audit a collected dataset, use `hspi verify DIR`)"
        );
    }
    let s = setup(&args.verify)?;
    let collect = args.target.collect_args()?;
    let (verification, records, spent) = verify_endpoint(&s, &args.verify, &collect)?;
    let refs: Vec<&hspi_datasets::Record> = records.iter().collect();
    let identification = s.model.identify(&refs, &s.references);
    let report = AuditReport {
        hspi_version: env!("CARGO_PKG_VERSION").into(),
        created_unix: hspi_datasets::manifest::unix_now(),
        endpoint: collect.endpoint.endpoint.clone().unwrap_or_default(),
        model: collect.model.clone(),
        claim: verification.claim.clone(),
        classifier_id: s.model.id.clone(),
        dataset: collect.out.display().to_string(),
        verification,
        identification,
        spent,
    };
    let json = hspi_reports::audit_report::render_json(&report);
    let md = hspi_reports::audit_report::render_markdown(&report);
    std::fs::write(collect.out.join("audit.json"), &json)?;
    std::fs::write(collect.out.join("audit.md"), &md)?;
    printer::status(&format!(
        "audit written to {} and {}",
        collect.out.join("audit.json").display(),
        collect.out.join("audit.md").display()
    ));
    printer::data(&if args.target.json { json } else { md });
    Ok(ExitCode::from(report.verification.verdict.exit_code()))
}
