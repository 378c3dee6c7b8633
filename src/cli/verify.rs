//! `hspi verify`: is a target serving the claimed platform? Sequential, budget-aware, over an
//! endpoint (queried one probe at a time, every answer stored) or over a collected dataset.

use std::process::ExitCode;

use anyhow::bail;
use hspi_audit::{repeat_verify_datasets, verify_datasets, verify_endpoint_report};
use hspi_cli::verify::Args;

use super::collect_http::open_endpoint;
use crate::printer;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let s = args.verify.setup()?;
    let (report, model) = if args.target.endpoint.endpoint.is_some() {
        let session = open_endpoint(&args.target.collect_args()?)?;
        verify_endpoint_report(&s, session, &args.target.model, &printer::lines())?
    } else {
        if args.datasets.is_empty() {
            bail!("nothing to verify: give datasets of the target's answers, or --endpoint URL --model NAME --probes FILE --out DIR");
        }
        if args.routed.is_some() && args.verify.audits == 0 {
            bail!("--routed replays a provider over many audits: give --audits N too");
        }
        if args.verify.audits > 0 {
            let (v, t) = (&args.verify, &args.target);
            let of = args.answers_of.as_ref();
            let routed = args
                .routed
                .as_ref()
                .map(|r| (std::slice::from_ref(&r.dir), r.share));
            let tally = repeat_verify_datasets(
                &s,
                &args.datasets,
                of,
                v.audits,
                v.seed,
                v.shown_as,
                routed,
            )?;
            printer::json_or(t.json, &tally, hspi_reports::verification_table::tally_text)?;
            return Ok(ExitCode::SUCCESS);
        }
        verify_datasets(
            &s,
            &args.datasets,
            args.answers_of.as_ref(),
            args.verify.shown_as,
        )?
    };
    if let Some(path) = &args.verify.report {
        hspi_reports::json::write(path, &model)?;
    }
    printer::json_or(
        args.target.json,
        &report,
        hspi_reports::verification_table::text,
    )?;
    Ok(ExitCode::from(report.exit_code()))
}
