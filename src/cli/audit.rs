//! `hspi audit`: verify a claim against an endpoint, identify what it serves from the same
//! answers, and write the report (JSON, Markdown, HTML) next to the answers' dataset.

use std::process::ExitCode;

use hspi_audit::audit_endpoint;

use super::collect_http::open_endpoint;
use super::verify::{EndpointTarget, VerifyArgs};
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
    let s = args.verify.setup()?;
    let session = open_endpoint(&args.target.collect_args()?)?;
    let report = audit_endpoint(&s, session, &args.target.model, &printer::lines())?;
    printer::data(&if args.target.json {
        hspi_reports::json::render(&report)
    } else {
        hspi_reports::markdown::render(&report)
    });
    Ok(ExitCode::from(report.exit_code()))
}
