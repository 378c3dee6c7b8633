//! `hspi collect --endpoint URL`: collection from an OpenAI-compatible endpoint, paying safely.

use std::process::ExitCode;

use hspi_cli::{collect::Args, command_line};
use hspi_collect::session::EndpointSession;

use crate::printer;
use crate::progress::Bar;

/// Open the endpoint's dataset for `hspi collect --endpoint` (and `verify`/`audit`).
pub fn open_endpoint(args: &Args) -> anyhow::Result<EndpointSession> {
    let e = &args.endpoint;
    let options = e.options(&args.model)?;
    let probes = hspi_probe::prompts_for(&args.probes, args.seed, e.max_tokens, e.top_logprobs)?;
    Ok(EndpointSession::open(
        &options,
        probes,
        &args.out,
        hspi_datasets::OpenMode::from_flags(args.resume, args.force),
        &command_line(),
    )?)
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let done = open_endpoint(args)?.collect_all(&Bar::new())?;
    printer::status(&done.to_string());
    if args.json && done.stopped.is_none() {
        printer::data(&serde_json::to_string_pretty(&done)?);
    }
    Ok(ExitCode::from(if done.stopped.is_some() { 3 } else { 0 }))
}
