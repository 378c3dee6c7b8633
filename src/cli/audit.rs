//! `hspi audit`: verify a claim against an endpoint, identify what it serves from the same
//! answers, check the API contract, and write the report (JSON, Markdown, HTML) next to the
//! answers' dataset. With a pack (`--pack DIR`, or `--model M` for an installed one) nothing
//! else is needed: no engine runs here.

use std::process::ExitCode;

use hspi_audit::{audit_endpoint, audit_with_pack, FreshPrompts, PackAudit};
use hspi_cli::audit::{Args, FreshFormat};
use hspi_cli::command_line;
use hspi_datasets::OpenMode;

use super::collect_http::open_endpoint;
use crate::printer;

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let t = &a.target;
    if t.endpoint.endpoint.is_none() {
        anyhow::bail!(
            "hspi audit needs --endpoint URL (to audit a collected dataset, use `hspi verify DIR`)"
        );
    }
    let report = if a.verify.classifier.is_some() {
        let session = open_endpoint(&t.collect_args()?)?;
        audit_endpoint(&a.verify.setup()?, session, &t.model, &printer::lines())?
    } else {
        let audit = PackAudit {
            pack: a.pack.as_deref(),
            claim: &a.verify.claim,
            draw: a.draw,
            seed: a.draw_seed,
            params: a.verify.params(),
            endpoint: t.endpoint.options(&t.model)?,
            out: t.out.as_deref(),
            mode: OpenMode::from_flags(false, t.force),
            command: &command_line(),
            fresh: a.weights.as_deref().map(|weights| FreshPrompts {
                weights,
                formats: a
                    .fresh_formats
                    .iter()
                    .filter_map(|f| match f {
                        FreshFormat::Format(f) => Some(*f),
                        FreshFormat::None => None,
                    })
                    .collect(),
                local: !a.fresh_formats.contains(&FreshFormat::None),
                servers: a.engines.reference_server.clone(),
                endpoints: a.engines.reference_endpoint.clone(),
                endpoint_key_env: a.engines.reference_key_env.clone(),
                gpus: a.engines.reference_gpu.clone(),
                residency: a.fresh_memory,
                context: a.fresh_context,
            }),
            deterministic: a.deterministic,
        };
        audit_with_pack(audit, &printer::lines())?
    };
    printer::json_or(t.json, &report, hspi_reports::markdown::render)?;
    Ok(ExitCode::from(report.exit_code()))
}
