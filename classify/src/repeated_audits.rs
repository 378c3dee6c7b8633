//! One audit repeated over seeded random orders of a target's collected answers: how often each
//! verdict and each claimed dimension's status comes out, and how many queries and output tokens
//! a decision took. An auditor's estimate of how stable a verdict is, and how false accusations
//! are counted over hundreds of audits.

use std::collections::BTreeMap;

use hspi_datasets::{Dimension, Record};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::audit::{run_audit, RecordSource};
use crate::error::ClassifyError;
use crate::verify::{Verdict, Verifier, VerifyReport};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditTally {
    pub claim: String,
    pub audits: usize,
    pub seed: u64,
    /// The answers each audit drew its queries from (in a random order each).
    pub answers: usize,
    /// Verdict name → audits that ended so.
    pub verdicts: BTreeMap<String, usize>,
    /// Per claimed dimension, status → audits that ended so.
    pub dimensions: Vec<(Dimension, BTreeMap<String, usize>)>,
    /// Per claimed dimension, what the audits named as nearest (`unseen` for a format no
    /// reference covers) → audits that named it.
    #[serde(default)]
    pub nearest: Vec<(Dimension, BTreeMap<String, usize>)>,
    pub mean_queries: f64,
    pub max_queries: usize,
    pub mean_output_tokens: f64,
    pub max_output_tokens: u64,
    /// Where the replay routed a share of requests elsewhere (`--routed`): that share, and the
    /// audits called mixed whose interval for the share off the claim covers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routed_share: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed_covering: Option<usize>,
}

impl AuditTally {
    /// Audits whose verdict was `verdict` (a [`crate::verify::Verdict::name`]).
    pub fn count(&self, verdict: &str) -> usize {
        self.verdicts.get(verdict).copied().unwrap_or(0)
    }

    /// Audits whose `dimension` ended with `status` (a `DimensionStatus` name).
    pub fn dimension_count(&self, dimension: Dimension, status: &str) -> usize {
        self.dimensions
            .iter()
            .find(|(d, _)| *d == dimension)
            .and_then(|(_, s)| s.get(status).copied())
            .unwrap_or(0)
    }
}

/// One more audit with `key` on dimension `d`.
fn count(tally: &mut Vec<(Dimension, BTreeMap<String, usize>)>, d: Dimension, key: &str) {
    let at = match tally.iter().position(|(x, _)| *x == d) {
        Some(at) => at,
        None => {
            tally.push((d, BTreeMap::new()));
            tally.len() - 1
        }
    };
    *tally[at].1.entry(key.to_string()).or_default() += 1;
}

/// A provider replayed as routing a share of its requests to another deployment: each request
/// answered from `records` with probability `share`, else from the target's own answers.
#[derive(Debug, Clone, Copy)]
pub struct RoutedReplay<'r> {
    pub records: &'r [Record],
    pub share: f64,
}

impl RoutedReplay<'_> {
    /// One audit's requests: both deployments' answers shuffled, each request drawn from the
    /// routed one with probability `share`, until either runs out.
    fn order(&self, own: &[Record], rng: &mut ChaCha8Rng) -> Vec<Record> {
        let (mut mine, mut routed) = (own.to_vec(), self.records.to_vec());
        // One endpoint in front of both: its answers all come from the provider's address.
        if let Some(target) = own.first().map(|r| r.target.clone()) {
            for r in &mut routed {
                r.target = target.clone();
            }
        }
        mine.shuffle(rng);
        routed.shuffle(rng);
        let (mut mine, mut routed) = (mine.into_iter(), routed.into_iter());
        let mut order = Vec::new();
        loop {
            let next = if rand::Rng::random_bool(rng, self.share) {
                routed.next()
            } else {
                mine.next()
            };
            match next {
                Some(r) => order.push(r),
                None => return order,
            }
        }
    }

    /// Whether a mixed verdict's interval for the share off the claim covers the replayed share.
    fn covered(&self, verdict: &Verdict) -> bool {
        let Verdict::Mixed { routes, .. } = verdict else {
            return false;
        };
        routes
            .iter()
            .filter(|r| !r.on_claim)
            .max_by_key(|r| r.answers)
            .is_some_and(|r| r.low <= self.share && self.share <= r.high)
    }
}

/// One replayed audit's report, and whether its mixed verdict's interval covered the replayed
/// share.
type AuditOutcome = Result<(VerifyReport, bool), ClassifyError>;

/// `audits` audits of the same target, the i-th asking its answers in the order a generator
/// seeded with `seed + i` shuffles them (a share routed elsewhere where `routed` says so);
/// `verifier` makes each audit's fresh verifier. The audits are independent: they run on every
/// core, and the tally is summed in their order, so it is the same on any number of cores.
pub fn repeat_audits<'v>(
    verifier: &(dyn Fn() -> Result<Verifier<'v>, ClassifyError> + Sync),
    records: &[Record],
    audits: usize,
    seed: u64,
    routed: Option<RoutedReplay>,
) -> Result<AuditTally, ClassifyError> {
    if let Some(share) = routed.map(|r| r.share).filter(|s| !(*s > 0.0 && *s < 1.0)) {
        return Err(ClassifyError::Param(format!(
            "--routed share {share}: must lie in (0, 1)"
        )));
    }
    if audits == 0 || records.is_empty() {
        return Err(ClassifyError::Param(format!(
            "{audits} audits over {} answers: need at least one of each",
            records.len()
        )));
    }
    let one = |i: usize| -> AuditOutcome {
        let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_add(i as u64));
        let order = match &routed {
            Some(r) => r.order(records, &mut rng),
            None => {
                let mut order = records.to_vec();
                order.shuffle(&mut rng);
                order
            }
        };
        let mut source = RecordSource::as_asked(&order)?;
        let report = run_audit(verifier()?, &mut source, &mut |_, _| Ok(()))?.report;
        let covered = routed.as_ref().is_some_and(|r| r.covered(&report.verdict));
        Ok((report, covered))
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(audits);
    let mut done: Vec<(usize, AuditOutcome)> = std::thread::scope(|scope| {
        let one = &one;
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                scope.spawn(move || {
                    (w..audits)
                        .step_by(workers)
                        .map(|i| (i, one(i)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a replayed audit panicked"))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);

    let mut tally = AuditTally {
        claim: String::new(),
        audits,
        seed,
        answers: records.len(),
        verdicts: BTreeMap::new(),
        dimensions: Vec::new(),
        nearest: Vec::new(),
        mean_queries: 0.0,
        max_queries: 0,
        mean_output_tokens: 0.0,
        max_output_tokens: 0,
        routed_share: routed.map(|r| r.share),
        mixed_covering: routed.map(|_| 0),
    };
    for (_, outcome) in done {
        let (report, covered) = outcome?;
        if let Some(n) = &mut tally.mixed_covering {
            *n += usize::from(covered);
        }
        tally.claim = report.claim.clone();
        *tally
            .verdicts
            .entry(report.verdict.name().to_string())
            .or_default() += 1;
        for d in &report.dimensions {
            let named = if d.unseen { "unseen" } else { &d.nearest };
            count(&mut tally.dimensions, d.dimension, d.status.name());
            count(&mut tally.nearest, d.dimension, named);
        }
        tally.mean_queries += report.queries as f64 / audits as f64;
        tally.max_queries = tally.max_queries.max(report.queries);
        tally.mean_output_tokens += report.output_tokens as f64 / audits as f64;
        tally.max_output_tokens = tally.max_output_tokens.max(report.output_tokens);
    }
    Ok(tally)
}
