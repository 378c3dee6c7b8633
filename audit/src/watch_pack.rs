//! The auditor a real watch runs: each round's audit of a provider is `hspi audit --pack` with the
//! round's own seeded draw from the pack's pool, its budget capped by what the whole watch may
//! still spend. A provider that cannot be reached is a finding of the round, not the end of the
//! watch. `--replay --pack` re-verifies every stored round with today's statistics.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hspi_classify::verify::VerifyParams;
use hspi_collect::session::{api_key_from_env, EndpointOptions};
use hspi_datasets::{OpenMode, Presentation};

use crate::error::AuditError;
use crate::pack_audit::{audit_with_pack, open_pack, PackAudit};
use crate::setup::{verify_datasets, VerifySetup};
use crate::watch::{RoundAuditor, WatchPlan, WatchProvider};
use crate::watch_log::{RoundOutcome, RoundRecord};
use crate::Lines;

/// What the whole watch may spend, over every provider, round and rerun.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TotalBudget {
    pub max_requests: Option<u64>,
    pub max_cost: Option<f64>,
}

impl TotalBudget {
    /// Requests and cost the rounds logged so far spent.
    pub fn spent(records: &[RoundRecord]) -> (u64, f64) {
        records.iter().fold((0, 0.0), |(r, c), x| {
            (r + x.outcome.requests, c + x.outcome.cost)
        })
    }
}

pub struct PackRoundAuditor<'a> {
    /// None: the installed pack for the endpoint's model.
    pub pack: Option<&'a Path>,
    pub plan: &'a WatchPlan,
    /// Prompts drawn from the pool per audit.
    pub draw: usize,
    pub params: VerifyParams,
    /// Every audit's endpoint settings (each provider's URL and key replace these); its budget
    /// caps each audit.
    pub endpoint: EndpointOptions,
    pub total: TotalBudget,
    /// Requests and cost spent so far (the log's, then each audit's).
    pub spent: (u64, f64),
    pub lines: &'a Lines<'a>,
    pub command: String,
}

impl PackRoundAuditor<'_> {
    /// This audit's caps: the per-audit budget, lowered to what the watch has left; an error
    /// once nothing is left.
    fn capped(&self, mut endpoint: EndpointOptions) -> Result<EndpointOptions, AuditError> {
        let (requests, cost) = self.spent;
        let exhausted = self.total.max_requests.is_some_and(|m| requests >= m)
            || self.total.max_cost.is_some_and(|m| cost >= m);
        if exhausted {
            return Err(AuditError::WatchBudget {
                requests,
                cost,
                max_requests: self.total.max_requests,
                max_cost: self.total.max_cost,
            });
        }
        let b = &mut endpoint.budget;
        if let Some(m) = self.total.max_requests {
            b.max_requests = Some(b.max_requests.map_or(m - requests, |r| r.min(m - requests)));
        }
        if let Some(m) = self.total.max_cost {
            b.max_cost = Some(b.max_cost.map_or(m - cost, |c| c.min(m - cost)));
        }
        Ok(endpoint)
    }
}

/// Where the raw responses of a round's audit are journalled: beside its dataset, so a rerun
/// that replaces the interrupted dataset gets its paid answers back at no cost.
pub fn round_journal(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map_or("audit".into(), |n| n.to_string_lossy());
    out.with_file_name(format!("{name}.journal.jsonl"))
}

impl RoundAuditor for PackRoundAuditor<'_> {
    fn audit(
        &mut self,
        provider: &WatchProvider,
        round: u32,
        out: &Path,
    ) -> Result<RoundOutcome, AuditError> {
        let mut endpoint = self.capped(self.endpoint.clone())?;
        let cap = endpoint.budget.max_requests;
        endpoint.url = provider.url.clone();
        endpoint.api_key = api_key_from_env(provider.api_key_env.as_deref())?;
        endpoint.journal = Some(round_journal(out));
        let audit = PackAudit {
            pack: self.pack,
            claim: &provider.claim,
            draw: self.draw,
            seed: Some(self.plan.draw_seed(round, &provider.name)),
            params: self.params.clone(),
            endpoint,
            out: Some(out),
            mode: OpenMode::Force,
            command: &self.command,
            fresh: None,
            deterministic: false,
        };
        let quiet = Lines {
            data: self.lines.data,
            status: &|_| {},
        };
        let outcome = match audit_with_pack(audit, &quiet) {
            Ok(report) => RoundOutcome::from_report(&report),
            // The endpoint failed (refused, answered garbage) or the round's budget ran out: the
            // round says so and the watch goes on. What it spent is not known: it is charged
            // its whole cap, so the total budget is never overrun.
            Err(e @ (AuditError::Collect(_) | AuditError::Classify(_))) => {
                RoundOutcome::failed(&e.to_string(), cap.unwrap_or(0))
            }
            Err(e) => return Err(e),
        };
        self.spent.0 += outcome.requests;
        self.spent.1 += outcome.cost;
        Ok(outcome)
    }
}

/// The rounds re-verified against the pack with today's statistics: each stored round's answers
/// decided again (its contract checks and cost kept as they were). A round whose answers are
/// gone keeps its logged outcome.
pub fn reverify(
    records: &[RoundRecord],
    plan: &WatchPlan,
    pack: Option<&Path>,
    model: &str,
    params: &VerifyParams,
) -> Result<Vec<RoundRecord>, AuditError> {
    let pack = open_pack(pack, model)?;
    let claims: BTreeMap<&str, &str> = plan
        .providers()
        .iter()
        .map(|p| (p.name.as_str(), p.claim.as_str()))
        .collect();
    let mut setups: BTreeMap<&str, VerifySetup> = BTreeMap::new();
    let mut out = Vec::with_capacity(records.len());
    for r in records {
        let Some(claim) = claims.get(r.provider.as_str()) else {
            out.push(r.clone());
            continue;
        };
        if !r.out.join("manifest.json").exists() {
            out.push(r.clone());
            continue;
        }
        if !setups.contains_key(claim) {
            let setup = VerifySetup::load(
                claim,
                &pack.classifier_path(),
                &pack.reference_dirs()?,
                params.clone(),
            )?;
            setups.insert(claim, setup);
        }
        let (verification, _) = verify_datasets(
            &setups[claim],
            std::slice::from_ref(&r.out),
            None,
            Presentation::Exact,
        )?;
        let mut again = r.clone();
        again.outcome.verdict = verification.verdict.name().into();
        again.outcome.dimensions = verification.dimensions;
        out.push(again);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_audit_gets_what_the_watch_has_left_and_none_once_it_is_spent() {
        let plan = WatchPlan::new(
            vec![
                WatchProvider::parse("a=http://x/v1/chat/completions", Some("*/*/f16/*")).unwrap(),
            ],
            3,
            std::time::Duration::ZERO,
            0.0,
            1,
        )
        .unwrap();
        let lines = Lines {
            data: &|_| {},
            status: &|_| {},
        };
        let mut endpoint = EndpointOptions {
            url: String::new(),
            api: None,
            model: String::new(),
            label: None,
            api_key: None,
            concurrency: 1,
            rate_limit: None,
            timeout: std::time::Duration::from_secs(1),
            retries: 0,
            budget: Default::default(),
            journal: None,
            text_only: false,
            allow_model_mismatch: false,
            strict_openai: false,
        };
        endpoint.budget.max_requests = Some(40);
        let mut auditor = PackRoundAuditor {
            pack: None,
            plan: &plan,
            draw: 8,
            params: VerifyParams::default(),
            endpoint: endpoint.clone(),
            total: TotalBudget {
                max_requests: Some(12),
                max_cost: Some(1.0),
            },
            spent: (10, 0.25),
            lines: &lines,
            command: String::new(),
        };
        let capped = auditor.capped(endpoint.clone()).unwrap();
        assert_eq!(
            capped.budget.max_requests,
            Some(2),
            "the total's 2 left, not 40"
        );
        assert_eq!(capped.budget.max_cost, Some(0.75));
        auditor.spent = (12, 0.25);
        let err = auditor.capped(endpoint).unwrap_err().to_string();
        assert!(err.contains("total budget is spent: 12 requests"), "{err}");
    }
}
