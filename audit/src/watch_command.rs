//! `hspi watch`: the watch as one call (plan settled in DIR, rounds audited and logged, changes
//! announced to `--on-change` as they are flagged, the comparison rewritten after every round),
//! and `hspi watch --replay`: the findings recomputed from what a watch stored.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use hspi_classify::change_point::{Change, ChangeParams};
use hspi_classify::verify::VerifyParams;
use hspi_collect::session::EndpointOptions;
use hspi_reports::report::Report;
use serde::Serialize;

use crate::error::AuditError;
use crate::watch::{findings, run_watch, Clock, RoundAuditor, WatchPlan, WatchProvider};
use crate::watch_comparison::{watch_report, write_comparison};
use crate::watch_log::{RoundRecord, WatchLog};
use crate::watch_pack::{reverify, PackRoundAuditor, TotalBudget};
use crate::Lines;

pub struct WatchOptions<'a> {
    pub plan: WatchPlan,
    pub dir: &'a Path,
    pub pack: Option<&'a Path>,
    pub draw: usize,
    pub params: VerifyParams,
    pub endpoint: EndpointOptions,
    pub total: TotalBudget,
    pub change: ChangeParams,
    /// Run with each newly flagged change as JSON on its stdin (`sh -c`).
    pub on_change: Option<String>,
    pub command: String,
}

/// How a watch ended: its comparison report, and why it stopped early if it did.
pub struct WatchDone {
    pub report: Report,
    /// The total budget ran out before the last round.
    pub stopped: Option<String>,
}

impl WatchDone {
    /// The exit code, as `audit`'s for the worst standing; a watch stopped by its budget with
    /// nothing worse found exits 3 (inconclusive), as `collect` does.
    pub fn exit_code(&self) -> u8 {
        match (self.report.exit_code(), &self.stopped) {
            (0, Some(_)) => 3,
            (code, _) => code,
        }
    }
}

/// What `--on-change` reads on stdin.
#[derive(Debug, Serialize)]
pub struct ChangeNotice<'a> {
    pub provider: &'a WatchProvider,
    pub change: &'a Change,
    pub dir: &'a Path,
}

/// The changes flagged so far, as keys that stay the same when more rounds are logged.
fn change_keys(records: &[RoundRecord], params: ChangeParams) -> BTreeSet<(String, String, u32)> {
    findings(records, params)
        .iter()
        .flat_map(|f| {
            f.changes()
                .map(|c| (f.provider.clone(), c.dimension.to_string(), c.since_round))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn notify(cmd: &str, notice: &ChangeNotice, lines: &Lines) {
    let json = serde_json::to_string(notice).expect("a change serialises");
    let run = || -> std::io::Result<std::process::ExitStatus> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(json.as_bytes())?;
            stdin.write_all(b"\n")?;
        }
        child.wait()
    };
    // A failing hook is reported and the watch goes on: the finding is in the log either way.
    match run() {
        Ok(s) if s.success() => {}
        Ok(s) => (lines.status)(&format!("warning: --on-change '{cmd}' exited with {s}")),
        Err(e) => (lines.status)(&format!("warning: --on-change '{cmd}' could not run: {e}")),
    }
}

/// Run (or resume) the watch with a given auditor and clock.
pub fn watch_with(
    o: &WatchOptions,
    auditor: &mut dyn RoundAuditor,
    clock: &mut dyn Clock,
    lines: &Lines,
) -> Result<WatchDone, AuditError> {
    let plan = &o.plan;
    let mut records = WatchLog::open(o.dir)?.records()?;
    let mut known = change_keys(&records, o.change);
    let mut on_round = |r: &RoundRecord| {
        records.push(r.clone());
        let dims: Vec<String> = r
            .outcome
            .dimensions
            .iter()
            .map(|d| format!("{} {} ({})", d.dimension, d.status, d.nearest))
            .collect();
        (lines.status)(&format!(
            "round {} {}: {}{}{}",
            r.round,
            r.provider,
            r.outcome.verdict,
            if dims.is_empty() {
                String::new()
            } else {
                format!(" — {}", dims.join(", "))
            },
            r.outcome
                .error
                .as_deref()
                .and_then(|e| e.lines().next())
                .map_or(String::new(), |e| format!(" — {e}"))
        ));
        for f in findings(&records, o.change) {
            for c in f.changes() {
                let key = (f.provider.clone(), c.dimension.to_string(), c.since_round);
                if !known.insert(key) {
                    continue;
                }
                (lines.status)(&format!(
                    "CHANGE {}",
                    hspi_reports::comparison::change_sentence(&f.provider, c)
                ));
                let provider = plan.providers().iter().find(|p| p.name == f.provider);
                if let (Some(cmd), Some(provider)) = (&o.on_change, provider) {
                    let notice = ChangeNotice {
                        provider,
                        change: c,
                        dir: o.dir,
                    };
                    notify(cmd, &notice, lines);
                }
            }
        }
        let report = watch_report(o.dir, plan, &records, o.change);
        if let Err(e) = write_comparison(o.dir, &report) {
            (lines.status)(&format!("warning: {e}"));
        }
    };
    let result = run_watch(plan, o.dir, auditor, clock, &mut on_round);
    let records = WatchLog::open(o.dir)?.records()?;
    let stopped = match result {
        Ok(_) => None,
        Err(e @ AuditError::WatchBudget { .. }) => Some(e.to_string()),
        Err(e) => return Err(e),
    };
    let report = watch_report(o.dir, plan, &records, o.change);
    write_comparison(o.dir, &report)?;
    Ok(WatchDone { report, stopped })
}

/// Run (or resume) the watch against the real providers, auditing with the pack.
pub fn watch(o: WatchOptions, lines: &Lines) -> Result<WatchDone, AuditError> {
    let plan = o.plan.clone().settle(o.dir)?;
    let o = WatchOptions { plan, ..o };
    let records = WatchLog::open(o.dir)?.records()?;
    let mut auditor = PackRoundAuditor {
        pack: o.pack,
        plan: &o.plan,
        draw: o.draw,
        params: o.params.clone(),
        endpoint: o.endpoint.clone(),
        total: o.total,
        spent: TotalBudget::spent(&records),
        lines,
        command: o.command.clone(),
    };
    (lines.status)(&format!(
        "watching {} providers into {} ({} rounds logged already; seed {})",
        o.plan.providers().len(),
        o.dir.display(),
        records.len(),
        o.plan.seed()
    ));
    watch_with(&o, &mut auditor, &mut crate::watch::SystemClock, lines)
}

/// `hspi watch --replay DIR`: the findings recomputed from the stored rounds; with a pack, every
/// round's stored answers are first decided again with today's statistics.
pub fn replay(
    dir: &Path,
    pack: Option<&Path>,
    model: &str,
    params: &VerifyParams,
    change: ChangeParams,
) -> Result<Report, AuditError> {
    let plan = WatchPlan::load(dir)?;
    let mut records = crate::watch_log::read_records(&dir.join(WatchLog::FILE))?;
    if pack.is_some() || !model.is_empty() {
        records = reverify(&records, &plan, pack, model, params)?;
    }
    let report = watch_report(dir, &plan, &records, change);
    write_comparison(dir, &report)?;
    Ok(report)
}
