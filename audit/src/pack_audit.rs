//! `hspi audit --pack`: the one-command audit. A fresh random subset of the pack's pool is
//! asked, the claim decided against the pack's references and classifier (no engine runs
//! here), the API contract checked beside it, and the report written next to the answers.

use std::path::Path;

use hspi_classify::verify::VerifyParams;
use hspi_collect::session::{EndpointOptions, EndpointSession};
use hspi_datasets::{OpenMode, Platform, PlatformPattern};
use hspi_pack::{draw, fresh_seed, Pack, PackError};
use hspi_reports::contract::PackDraw;
use hspi_reports::report::Report;

use crate::contract::{billing, parameters, transport, Repeat};
use crate::endpoint::{audit_report, verify_endpoint, write_audit};
use crate::error::AuditError;
use crate::setup::VerifySetup;
use crate::Lines;

/// Prompts drawn per audit when not told: three times what a format verdict usually takes
/// (8 answers of 8 tokens), so text-only and rounded endpoints have room too.
pub const DEFAULT_DRAW: usize = 24;

pub struct PackAudit<'a> {
    /// The pack; None: the installed pack for the endpoint's model.
    pub pack: Option<&'a Path>,
    pub claim: &'a str,
    /// Prompts to draw from the pool.
    pub draw: usize,
    /// None: a fresh unpredictable seed (reported, so the draw can be reproduced).
    pub seed: Option<u64>,
    pub params: VerifyParams,
    /// The endpoint; `model` is the name it is asked for (empty: the pack's model).
    pub endpoint: EndpointOptions,
    /// Where the answers and the report go (None: `./hspi-audit-UNIXTIME`).
    pub out: Option<&'a Path>,
    pub mode: OpenMode,
    pub command: &'a str,
}

/// The pack at `dir`, else the installed pack for `model`; checked.
pub(crate) fn open_pack(dir: Option<&Path>, model: &str) -> Result<Pack, AuditError> {
    Ok(match (dir, model) {
        (Some(dir), _) => Pack::open(dir)?,
        (None, "") => return Err(AuditError::Usage("hspi audit needs --pack DIR, --model NAME (to use its installed pack), or --classifier FILE --references DIRS".into())),
        (None, m) => hspi_pack::find_installed(&hspi_collect::zoo::cache_dir(), m)?,
    })
}

/// Where an audit keeps its answers when not told: `hspi-audit-UNIXTIME` here.
fn default_out() -> std::path::PathBuf {
    format!("hspi-audit-{}", hspi_datasets::manifest::unix_now()).into()
}

/// Refuse a pack made for another model than the one the endpoint is asked for.
pub fn check_model(pack: &Pack, asked: &str) -> Result<(), PackError> {
    if pack.manifest.model.matches(asked) {
        return Ok(());
    }
    Err(PackError::OtherModel {
        pack: pack.dir.clone(),
        pack_model: pack.manifest.model.id.clone(),
        asked: asked.to_string(),
    })
}

/// Whether every platform of the pack the claim covers repeats itself bit for bit (measured).
fn claimed_repeat_bitwise(pack: &Pack, claim: &PlatformPattern) -> bool {
    let claimed: Vec<_> = pack
        .manifest
        .platforms
        .iter()
        .filter(|p| {
            p.platform
                .parse::<Platform>()
                .is_ok_and(|pl| claim.matches(&pl))
        })
        .collect();
    !claimed.is_empty() && claimed.iter().all(|p| p.deterministic == Some(true))
}

pub fn audit_with_pack(a: PackAudit, lines: &Lines) -> Result<Report, AuditError> {
    let pack = &open_pack(a.pack, &a.endpoint.model)?;
    let mut endpoint = a.endpoint;
    if endpoint.model.is_empty() {
        endpoint.model = pack.manifest.model.id.clone();
    }
    check_model(pack, &endpoint.model)?;
    let pool = hspi_probe::read_probe_set(&pack.pool_path())?;
    let seed = a.seed.unwrap_or_else(fresh_seed);
    let drawn = draw(&pool, a.draw.min(pool.probes.len()), seed)?;
    (lines.status)(&format!(
        "pack {}@{}: {} of its {} prompts drawn at random (seed {seed}); references for {} platforms",
        pack.manifest.name,
        pack.short_id(),
        drawn.probes.probes.len(),
        drawn.pool,
        pack.manifest.platforms.len()
    ));
    let setup = VerifySetup::load(
        a.claim,
        &pack.classifier_path(),
        &pack.reference_dirs()?,
        a.params,
    )?;
    // An audit goes on when logprobs do not come back: it says so and weighs the text.
    endpoint.text_only = true;
    let model = endpoint.model.clone();
    let out = a.out.map_or_else(default_out, Path::to_path_buf);
    let mut session =
        EndpointSession::open(&endpoint, drawn.probes.clone(), &out, a.mode, a.command)?;
    let mut v = verify_endpoint(&setup, &mut session, &model, lines)?;

    let repeat = v.records.first().map(|first| Repeat {
        first: first.clone(),
        again: session.ask_again(&first.probe_id),
        bitwise: claimed_repeat_bitwise(pack, &setup.claim),
    });
    v.spent.requests = session.budget.spent().requests;
    let contract = vec![
        billing(&v.records, pack.prompt_tokens()?.as_ref()),
        parameters(&v.records, &drawn.probes, repeat.as_ref()),
        transport(
            &session.failures(),
            v.spent.requests,
            &v.unanswered,
            v.records.len(),
        ),
    ];
    for c in &contract {
        (lines.status)(&format!("{}: {} — {}", c.name, c.status.name(), c.detail));
    }
    let out = session.out.clone();
    session.finish()?;
    let draw = PackDraw {
        pack: format!("{}@{}", pack.manifest.name, pack.short_id()),
        pool: drawn.pool,
        drawn: drawn.probes.probes.len(),
        seed,
        probes: drawn.probes.probes.iter().map(|p| p.id.clone()).collect(),
    };
    let report = audit_report(&setup, v, &out).with_contract(contract, Some(draw));
    write_audit(&report, &out, lines)?;
    Ok(report)
}
