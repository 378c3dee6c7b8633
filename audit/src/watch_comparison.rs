//! The comparison report of a watch: its log's rounds and findings as the report model
//! (`Evidence::Watch`), rewritten to `DIR/comparison.json` after every round so that
//! `hspi report --from DIR` renders the watch as it stands, even while it runs.

use std::collections::BTreeSet;
use std::path::Path;

use hspi_classify::change_point::{standing, ChangeParams, RoundEvidence};
use hspi_classify::dimension_verdict::DimensionStatus;
use hspi_datasets::Dimension;
use hspi_reports::comparison::{Comparison, DimensionShares, ProviderRow, RoundPoint};
use hspi_reports::report::{Atlas, Context, Report, Spent, Subject};

use crate::error::AuditError;
use crate::watch::{findings, WatchPlan};
use crate::watch_log::RoundRecord;

pub const COMPARISON_FILE: &str = "comparison.json";

/// Every provider of `plan` over the rounds in `records`.
pub fn comparison(
    dir: &Path,
    plan: &WatchPlan,
    records: &[RoundRecord],
    params: ChangeParams,
) -> Comparison {
    let found = findings(records, params);
    let providers = plan
        .providers()
        .iter()
        .map(|p| {
            let mut rounds: Vec<&RoundRecord> =
                records.iter().filter(|r| r.provider == p.name).collect();
            rounds.sort_by_key(|r| r.round);
            // Every dimension any round decided on; a round without it (unreachable, or not
            // deciding it) counts as inconclusive there.
            let dims: BTreeSet<(Dimension, String)> = rounds
                .iter()
                .flat_map(|r| r.outcome.dimensions.iter())
                .map(|d| (d.dimension, d.claimed.clone()))
                .collect();
            let states = found
                .iter()
                .find(|f| f.provider == p.name)
                .map(|f| f.states.clone())
                .unwrap_or_default();
            let dimensions = dims
                .into_iter()
                .map(|(dimension, claimed)| {
                    let evidence: Vec<RoundEvidence> = rounds
                        .iter()
                        .filter_map(|r| {
                            let d = r
                                .outcome
                                .dimensions
                                .iter()
                                .find(|d| d.dimension == dimension)?;
                            Some(RoundEvidence {
                                round: r.round,
                                status: d.status,
                                nearest: d.nearest.clone(),
                                log_likelihood_ratio: d.log_likelihood_ratio,
                            })
                        })
                        .collect();
                    let on: Vec<_> = states
                        .iter()
                        .filter(|c| c.dimension == dimension)
                        .cloned()
                        .collect();
                    let count = |s: DimensionStatus| {
                        evidence.iter().filter(|e| e.status == s).count() as u32
                    };
                    let decided = evidence.len() as u32;
                    DimensionShares {
                        dimension,
                        claimed,
                        consistent: count(DimensionStatus::Consistent),
                        mismatch: count(DimensionStatus::Mismatch),
                        unknown: count(DimensionStatus::Unknown),
                        inconclusive: count(DimensionStatus::Inconclusive)
                            + (rounds.len() as u32 - decided),
                        standing: standing(&evidence, &on),
                        state: on.last().map(|c| c.to.clone()),
                    }
                })
                .collect();
            let mut failed: Vec<(String, u32)> = Vec::new();
            for name in rounds
                .iter()
                .flat_map(|r| r.outcome.contract_failures.iter())
            {
                match failed.iter_mut().find(|f| &f.0 == name) {
                    Some(f) => f.1 += 1,
                    None => failed.push((name.clone(), 1)),
                }
            }
            ProviderRow {
                provider: p.name.clone(),
                endpoint: p.url.clone(),
                claim: p.claim.clone(),
                rounds: rounds.len() as u32,
                dimensions,
                contract_failures: rounds
                    .iter()
                    .filter(|r| !r.outcome.contract_failures.is_empty())
                    .count() as u32,
                contract_failed_checks: failed,
                requests: rounds.iter().map(|r| r.outcome.requests).sum(),
                output_tokens: rounds.iter().map(|r| r.outcome.output_tokens).sum(),
                cost: rounds.iter().map(|r| r.outcome.cost).sum(),
                states,
                series: rounds
                    .iter()
                    .map(|r| RoundPoint {
                        round: r.round,
                        started_unix: r.started_unix,
                        verdict: r.outcome.verdict.clone(),
                        dimensions: r
                            .outcome
                            .dimensions
                            .iter()
                            .map(|d| (d.dimension, d.status, d.nearest.clone()))
                            .collect(),
                        contract_failures: r.outcome.contract_failures.clone(),
                        cost: r.outcome.cost,
                        seconds: r.seconds,
                        out: r.out.display().to_string(),
                    })
                    .collect(),
            }
        })
        .collect();
    Comparison {
        dir: dir.display().to_string(),
        rounds: records.iter().map(|r| r.round).max().unwrap_or(0),
        first_unix: records.iter().map(|r| r.started_unix).min().unwrap_or(0),
        last_unix: records.iter().map(|r| r.started_unix).max().unwrap_or(0),
        rounds_to_flag: params.rounds_to_flag(),
        providers,
    }
}

/// The comparison as a report: the model, and the atlas its rounds were weighed against (read
/// from the latest round's own report).
pub fn watch_report(
    dir: &Path,
    plan: &WatchPlan,
    records: &[RoundRecord],
    params: ChangeParams,
) -> Report {
    let latest = records
        .iter()
        .rev()
        .find_map(|r| std::fs::read_to_string(r.out.join("audit.json")).ok())
        .and_then(|text| hspi_reports::json::parse(&text, "audit.json").ok());
    let (model, atlas) = match latest {
        Some(r) => (r.subject.model, r.atlas),
        None => (
            String::new(),
            Atlas {
                classifier_id: None,
                classes: Vec::new(),
                references: Vec::new(),
            },
        ),
    };
    let spent = Spent {
        queries: records.iter().map(|r| r.outcome.requests).sum(),
        requests: records.iter().map(|r| r.outcome.requests).sum(),
        output_tokens: records.iter().map(|r| r.outcome.output_tokens).sum(),
        cost: records.iter().map(|r| r.outcome.cost).sum(),
    };
    let subject = Subject {
        architecture: None,
        endpoint: None,
        model,
        claim: None,
    };
    Report::from_watch(
        Context::now(subject, spent, atlas),
        comparison(dir, plan, records, params),
    )
}

/// Write the report to `DIR/comparison.json` (through a temporary file: a reader never sees
/// half of it).
pub fn write_comparison(dir: &Path, report: &Report) -> Result<(), AuditError> {
    let path = dir.join(COMPARISON_FILE);
    let tmp = dir.join(format!("{COMPARISON_FILE}.tmp"));
    std::fs::write(&tmp, hspi_reports::json::render(report)).map_err(AuditError::io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(AuditError::io(&path))
}
