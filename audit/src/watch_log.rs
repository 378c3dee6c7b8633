//! The durable log of a watch: one JSON line per provider per round, appended and synced as each
//! audit ends, so a watch killed at any moment resumes where it stopped and its history can be
//! replayed (`hspi watch --replay`) with today's statistics.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use hspi_classify::dimension_verdict::DimensionVerdict;
use hspi_reports::contract::CheckStatus;
use hspi_reports::report::{Evidence, Report};
use serde::{Deserialize, Serialize};

use crate::error::AuditError;

/// What one audit of one provider found, as the watch keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundOutcome {
    /// consistent / mismatch / unknown platform / inconclusive / tampered.
    pub verdict: String,
    pub dimensions: Vec<DimensionVerdict>,
    /// Contract checks (billing, parameters, transport) that failed.
    pub contract_failures: Vec<String>,
    pub requests: u64,
    pub output_tokens: u64,
    pub cost: f64,
    /// Why the round has no verdict: the endpoint could not be audited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RoundOutcome {
    /// A round whose audit failed before a verdict (the endpoint refused or answered garbage,
    /// the round's budget ran out), charged `requests`.
    pub fn failed(error: &str, requests: u64) -> RoundOutcome {
        RoundOutcome {
            verdict: "inconclusive".into(),
            dimensions: Vec::new(),
            contract_failures: Vec::new(),
            requests,
            output_tokens: 0,
            cost: 0.0,
            error: Some(error.to_string()),
        }
    }

    pub fn from_report(report: &Report) -> RoundOutcome {
        let (dimensions, down) = match &report.evidence {
            Evidence::Audit { verification, .. } | Evidence::Verify { verification } => (
                verification.dimensions.clone(),
                verification.endpoint_down.clone(),
            ),
            _ => (Vec::new(), None),
        };
        // An endpoint that went down before the evidence decided leaves the round without a
        // verdict, as a refused connection does; an accusation that stood before it went down
        // is kept as the round's verdict.
        let error = down.filter(|_| report.summary.verdict == "inconclusive");
        RoundOutcome {
            verdict: report.summary.verdict.clone(),
            dimensions,
            contract_failures: report
                .contract
                .iter()
                .filter(|c| c.status == CheckStatus::Fail)
                .map(|c| c.name.clone())
                .collect(),
            requests: report.spent.requests,
            output_tokens: report.spent.output_tokens,
            cost: report.spent.cost,
            error,
        }
    }
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub round: u32,
    pub provider: String,
    pub started_unix: u64,
    /// How long the audit took (wall time).
    #[serde(default)]
    pub seconds: f64,
    /// Where this audit's answers and report are.
    pub out: PathBuf,
    pub outcome: RoundOutcome,
}

pub struct WatchLog {
    path: PathBuf,
    file: File,
}

impl WatchLog {
    pub const FILE: &'static str = "rounds.jsonl";

    /// Open (or start) the log in `dir`.
    pub fn open(dir: &Path) -> Result<WatchLog, AuditError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| AuditError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(Self::FILE);
        // A line a kill cut short is dropped before anything is appended after it.
        if let Ok(text) = std::fs::read(&path) {
            if !text.is_empty() && !text.ends_with(b"\n") {
                let keep = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
                let f = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(io(&path))?;
                f.set_len(keep as u64).map_err(io(&path))?;
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(WatchLog { path, file })
    }

    /// Every round recorded. A last line cut short by a kill is dropped (its audit runs again,
    /// its answers replayed from the journal); any other line that does not parse is an error
    /// naming it.
    pub fn records(&self) -> Result<Vec<RoundRecord>, AuditError> {
        read_records(&self.path)
    }

    /// Append one round and sync it to disk before returning.
    pub fn append(&mut self, record: &RoundRecord) -> Result<(), AuditError> {
        let io = |source| AuditError::Io {
            path: self.path.clone(),
            source,
        };
        let mut line = serde_json::to_vec(record).expect("a round record serialises");
        line.push(b'\n');
        self.file.write_all(&line).map_err(io)?;
        self.file.sync_data().map_err(io)
    }
}

/// The rounds recorded in a log file (see [`WatchLog::records`]).
pub fn read_records(path: &Path) -> Result<Vec<RoundRecord>, AuditError> {
    let text = std::fs::read_to_string(path).map_err(|source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut records = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(r) => records.push(r),
            Err(_) if i + 1 == lines.len() && !complete => break,
            Err(e) => {
                return Err(AuditError::NotAWatchRound {
                    path: path.display().to_string(),
                    line: i + 1,
                    why: e.to_string(),
                })
            }
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn record(round: u32, provider: &str) -> RoundRecord {
        RoundRecord {
            round,
            provider: provider.into(),
            started_unix: 1,
            seconds: 0.5,
            out: PathBuf::from(format!("round-{round}/{provider}")),
            outcome: RoundOutcome {
                verdict: "consistent".into(),
                dimensions: Vec::new(),
                contract_failures: Vec::new(),
                requests: 3,
                output_tokens: 24,
                cost: 0.0,
                error: None,
            },
        }
    }

    #[test]
    fn rounds_survive_a_torn_last_line_and_a_reopen() {
        let tmp = tempfile::tempdir().unwrap();
        let mut log = WatchLog::open(tmp.path()).unwrap();
        log.append(&record(1, "a")).unwrap();
        log.append(&record(1, "b")).unwrap();
        drop(log);
        // A kill in the middle of a write leaves half a line.
        let path = tmp.path().join(WatchLog::FILE);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"round\":2,\"prov").unwrap();
        let mut log = WatchLog::open(tmp.path()).unwrap();
        assert_eq!(log.records().unwrap(), vec![record(1, "a"), record(1, "b")]);
        log.append(&record(2, "a")).unwrap();
        assert_eq!(log.records().unwrap().len(), 3);
    }

    #[test]
    fn a_damaged_line_inside_the_log_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(WatchLog::FILE);
        std::fs::write(&path, "not json\n{}\n").unwrap();
        let err = read_records(&path).unwrap_err().to_string();
        assert!(err.contains("rounds.jsonl:1"), "{err}");
    }
}
