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
use crate::verify::Verifier;

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

/// `audits` audits of the same target, the i-th asking its answers in the order a generator
/// seeded with `seed + i` shuffles them; `verifier` makes each audit's fresh verifier.
pub fn repeat_audits<'v>(
    verifier: &dyn Fn() -> Result<Verifier<'v>, ClassifyError>,
    records: &[Record],
    audits: usize,
    seed: u64,
) -> Result<AuditTally, ClassifyError> {
    if audits == 0 || records.is_empty() {
        return Err(ClassifyError::Param(format!(
            "{audits} audits over {} answers: need at least one of each",
            records.len()
        )));
    }
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
    };
    for i in 0..audits as u64 {
        let mut order = records.to_vec();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed.wrapping_add(i)));
        let mut source = RecordSource::as_asked(&order)?;
        let report = run_audit(verifier()?, &mut source, &mut |_, _| Ok(()))?.report;
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
