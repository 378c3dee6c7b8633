//! The comparison report's model (`hspi report --from WATCH_DIR`): every watched provider over
//! every round, side by side. What a procurement team files: per provider and claimed dimension
//! the share of rounds consistent / mismatch / unknown / inconclusive, the contract failures and
//! the cost, each provider's rounds as a time series, and every change with its evidence.

use hspi_classify::change_point::Change;
use hspi_classify::dimension_verdict::DimensionStatus;
use hspi_datasets::Dimension;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The watch directory the rounds were read from.
    pub dir: String,
    /// The highest round any provider reached.
    pub rounds: u32,
    pub first_unix: u64,
    pub last_unix: u64,
    /// Decided rounds of another value before a change is flagged.
    pub rounds_to_flag: u32,
    pub providers: Vec<ProviderRow>,
}

impl Comparison {
    /// Every change flagged, over all providers, in round order.
    pub fn changes(&self) -> Vec<(&str, &Change)> {
        let mut all: Vec<(&str, &Change)> = self
            .providers
            .iter()
            .flat_map(|p| p.changes().map(move |c| (p.provider.as_str(), c)))
            .collect();
        all.sort_by_key(|(p, c)| (c.flagged_at_round, c.since_round, p.to_string()));
        all
    }

    /// The worst standing over every provider and claimed dimension (consistent when none).
    pub fn worst(&self) -> DimensionStatus {
        self.providers
            .iter()
            .map(ProviderRow::worst)
            .max()
            .unwrap_or(DimensionStatus::Consistent)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRow {
    pub provider: String,
    pub endpoint: String,
    pub claim: String,
    /// Rounds audited.
    pub rounds: u32,
    pub dimensions: Vec<DimensionShares>,
    /// Rounds in which at least one API contract check (billing, parameters, transport) failed.
    pub contract_failures: u32,
    /// Each failed check's name with the rounds it failed in.
    pub contract_failed_checks: Vec<(String, u32)>,
    pub requests: u64,
    pub output_tokens: u64,
    pub cost: f64,
    /// The first state established on each dimension, then each change.
    pub states: Vec<Change>,
    pub series: Vec<RoundPoint>,
}

impl ProviderRow {
    pub fn changes(&self) -> impl Iterator<Item = &Change> {
        self.states.iter().filter(|c| c.is_change())
    }

    pub fn worst(&self) -> DimensionStatus {
        self.dimensions
            .iter()
            .map(|d| d.standing)
            .max()
            .unwrap_or(DimensionStatus::Inconclusive)
    }
}

/// One claimed dimension of one provider over all its rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DimensionShares {
    pub dimension: Dimension,
    pub claimed: String,
    pub consistent: u32,
    pub mismatch: u32,
    pub unknown: u32,
    pub inconclusive: u32,
    /// Where the provider stands now on it (`change_point::standing`).
    pub standing: DimensionStatus,
    /// The value the provider's established state names (None: no state yet).
    pub state: Option<String>,
}

impl DimensionShares {
    pub fn total(&self) -> u32 {
        self.consistent + self.mismatch + self.unknown + self.inconclusive
    }

    /// Rounds with `status`, as a share of all.
    pub fn share(&self, status: DimensionStatus) -> f64 {
        let n = match status {
            DimensionStatus::Consistent => self.consistent,
            DimensionStatus::Mismatch => self.mismatch,
            DimensionStatus::Unknown => self.unknown,
            DimensionStatus::Inconclusive => self.inconclusive,
        };
        f64::from(n) / f64::from(self.total().max(1))
    }
}

/// One round of one provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundPoint {
    pub round: u32,
    pub started_unix: u64,
    pub verdict: String,
    /// Per claimed dimension: its status this round and the value its nearest class has.
    pub dimensions: Vec<(Dimension, DimensionStatus, String)>,
    pub contract_failures: Vec<String>,
    pub cost: f64,
    /// The audit's wall time.
    #[serde(default)]
    pub seconds: f64,
    /// Where the round's answers and report are.
    pub out: String,
}

/// The status of `p` on `d` (inconclusive when the round did not decide it).
pub fn status_on(p: &RoundPoint, d: Dimension) -> DimensionStatus {
    p.dimensions
        .iter()
        .find(|x| x.0 == d)
        .map_or(DimensionStatus::Inconclusive, |x| x.1)
}

/// One sentence on a change, for every exporter.
pub fn change_sentence(provider: &str, c: &Change) -> String {
    format!(
        "{provider}: {} changed from {} to {} at round {} (flagged at round {}, {} rounds of evidence)",
        c.dimension,
        c.from.as_deref().unwrap_or("nothing"),
        c.to,
        c.since_round,
        c.flagged_at_round,
        c.evidence.len()
    )
}

/// The comparison table's header: one row per provider and claimed dimension.
pub const TABLE_HEADER: [&str; 11] = [
    "provider",
    "claim",
    "dimension",
    "consistent",
    "mismatch",
    "unknown",
    "inconclusive",
    "standing",
    "contract failures",
    "requests",
    "cost",
];

/// The comparison table's cells (every exporter prints these).
pub fn table_rows(c: &Comparison) -> Vec<[String; 11]> {
    let share = |d: &DimensionShares, s: DimensionStatus| {
        let n = match s {
            DimensionStatus::Consistent => d.consistent,
            DimensionStatus::Mismatch => d.mismatch,
            DimensionStatus::Unknown => d.unknown,
            DimensionStatus::Inconclusive => d.inconclusive,
        };
        format!("{:.0} % ({n})", d.share(s) * 100.0)
    };
    let mut rows = Vec::new();
    for p in &c.providers {
        for d in &p.dimensions {
            let standing = match &d.state {
                Some(v) => format!("{} ({v})", d.standing.name()),
                None => d.standing.name().to_string(),
            };
            rows.push([
                p.provider.clone(),
                p.claim.clone(),
                format!("{} = {}", d.dimension, d.claimed),
                share(d, DimensionStatus::Consistent),
                share(d, DimensionStatus::Mismatch),
                share(d, DimensionStatus::Unknown),
                share(d, DimensionStatus::Inconclusive),
                standing,
                format!("{} of {}", p.contract_failures, p.rounds),
                p.requests.to_string(),
                format!("{:.4}", p.cost),
            ]);
        }
    }
    rows
}

/// The evidence of one change, one row per round: round, status, nearest value, nats.
pub const EVIDENCE_HEADER: [&str; 4] = ["round", "status", "nearest", "log-likelihood ratio"];

pub fn evidence_rows(c: &Change) -> Vec<[String; 4]> {
    c.evidence
        .iter()
        .map(|e| {
            [
                e.round.to_string(),
                e.status.name().to_string(),
                e.nearest.clone(),
                e.log_likelihood_ratio
                    .map_or("–".to_string(), |l| format!("{l:.2}")),
            ]
        })
        .collect()
}
