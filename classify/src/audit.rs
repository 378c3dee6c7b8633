//! The audit's core: one sequential loop that asks an answer source probe by probe, in the
//! verifier's order, until the evidence suffices or the budget is spent. The CLI runs it over an
//! endpoint or collected records, the benchmark and the tests over theirs, unit tests over a mock.

use hspi_datasets::Record;

use crate::error::ClassifyError;
use crate::identify::output_tokens;
use crate::verify::{Verifier, VerifyReport};

/// An error an answer source passes through the loop untouched.
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// Something that answers probes one at a time: an endpoint, collected records, or a mock.
pub trait AnswerSource {
    /// The probes it can be asked, in its own order, with the most output tokens each may cost.
    fn probes(&self) -> Vec<(String, u64)>;
    /// Ask one probe (an id from [`AnswerSource::probes`]); the answer as a record.
    fn ask(&mut self, probe_id: &str) -> Result<Record, SourceError>;
    /// References for one of its answers, computed on the answer's own tokens (teacher forcing),
    /// weighed with it; none by default (the pack's references stand).
    fn references(&mut self, _answer: &Record) -> Result<Vec<Record>, SourceError> {
        Ok(Vec::new())
    }
    /// Whether the probes must be asked in the source's own order (a replay of answers in a
    /// given request order) rather than the verifier's most separating first.
    fn fixed_order(&self) -> bool {
        false
    }
}

/// A probe the source could not get answered (timeouts or server errors after its retries): the
/// audit skips it and goes on, so a flaky endpoint neither passes nor fails a claim by accident.
#[derive(Debug)]
pub struct Unanswered(pub String);

impl std::fmt::Display for Unanswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unanswered {}

/// The auditor's spending cap would be passed by the next request: the audit stops there, its
/// verdict standing on the answers before it (never an error that loses them).
#[derive(Debug)]
pub struct SpendingCapReached(pub String);

impl std::fmt::Display for SpendingCapReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpendingCapReached {}

/// Prompts in a row left unanswered after every retry at which an audit stops: the endpoint
/// went down. One such prompt is a flaky transport, skipped; three in a row (about 20 s of
/// retries against a refused connection) is an endpoint that stopped answering, and asking
/// every remaining prompt six times would cost minutes for nothing.
pub const DOWN_AFTER: usize = 3;

/// The verdict and every answer it weighed, in the order they were asked.
pub struct AuditOutcome {
    pub report: VerifyReport,
    pub records: Vec<Record>,
    /// Probes skipped for transport failures, with why.
    pub unanswered: Vec<(String, String)>,
}

impl AuditOutcome {
    /// Whether the audit stopped because the endpoint went down.
    pub fn endpoint_down(&self) -> bool {
        self.report.endpoint_down.is_some()
    }
}

/// Why the audit stopped early: the last [`DOWN_AFTER`] prompts went unanswered.
fn went_down(unanswered: &[(String, String)], answered: usize) -> String {
    let last = unanswered.last().map_or("", |(_, why)| why.as_str());
    format!(
        "the endpoint went down: {DOWN_AFTER} prompts in a row went unanswered after every retry (last: {last}); the audit stopped after {answered} answer{}, kept with the verdict they support",
        if answered == 1 { "" } else { "s" }
    )
}

/// Ask `source` probe by probe until the verifier decides or its budget (queries, output tokens)
/// is spent. `on_answer` sees each answer after it is weighed (progress lines, durable storage).
pub fn run_audit(
    mut verifier: Verifier,
    source: &mut dyn AnswerSource,
    on_answer: &mut dyn FnMut(&Record, &Verifier) -> Result<(), SourceError>,
) -> Result<AuditOutcome, ClassifyError> {
    let probes = source.probes();
    let ids: Vec<String> = probes.iter().map(|(id, _)| id.clone()).collect();
    let costs: std::collections::HashMap<&str, u64> =
        probes.iter().map(|(id, t)| (id.as_str(), *t)).collect();
    let fixed = source.fixed_order();
    let mut order = if fixed {
        ids
    } else {
        verifier.order_probes(&ids)
    };
    let mut records = Vec::new();
    let mut unanswered = Vec::new();
    let (mut in_a_row, mut down, mut capped) = (0, None, None);
    let mut next = 0;
    while next < order.len() {
        let id = order[next].clone();
        next += 1;
        let cost = costs.get(id.as_str()).copied().unwrap_or(0);
        if !verifier.can_continue(cost) {
            break;
        }
        let record = match source.ask(&id) {
            Ok(r) => r,
            Err(e) if e.is::<Unanswered>() => {
                unanswered.push((id, e.to_string()));
                in_a_row += 1;
                if in_a_row >= DOWN_AFTER {
                    down = Some(went_down(&unanswered, records.len()));
                    break;
                }
                continue;
            }
            Err(e) if e.is::<SpendingCapReached>() => {
                capped = Some(e.to_string());
                break;
            }
            Err(e) => return Err(ClassifyError::Source(e)),
        };
        in_a_row = 0;
        let shown = verifier.presentation();
        let references = source.references(&record).map_err(ClassifyError::Source)?;
        verifier.add_references(&references);
        verifier.observe(&record);
        // An endpoint that turns out to round or hide its logprobs is best told apart by other
        // probes (for text alone: those whose greedy texts differ): the rest are ordered again.
        if !fixed && verifier.presentation() != shown {
            let rest = verifier.order_probes(&order[next..]);
            order.truncate(next);
            order.extend(rest);
        }
        on_answer(&record, &verifier).map_err(ClassifyError::Source)?;
        records.push(record);
    }
    let mut report = verifier.finish();
    if let Some(why) = down {
        report.went_down(why);
    }
    if let Some(why) = capped {
        report.spending_cap_reached(why);
    }
    Ok(AuditOutcome {
        report,
        records,
        unanswered,
    })
}

/// Collected answers of one target as a source: each probe costs the tokens its answer used, or
/// a fixed count per query.
pub struct RecordSource<'r> {
    records: &'r [Record],
    in_order: bool,
    tokens_per_query: Option<u64>,
}

impl<'r> RecordSource<'r> {
    /// Refuses records of several targets: a verdict is about one.
    pub fn new(records: &'r [Record]) -> Result<RecordSource<'r>, ClassifyError> {
        let mut targets: Vec<&str> = records.iter().map(|r| r.target.as_str()).collect();
        targets.sort_unstable();
        targets.dedup();
        if targets.len() > 1 {
            return Err(ClassifyError::SeveralTargets {
                targets: targets.iter().map(ToString::to_string).collect(),
            });
        }
        Ok(RecordSource {
            records,
            in_order: false,
            tokens_per_query: None,
        })
    }

    /// A replay in the records' own order, each query costing the tokens its answer used.
    pub fn as_asked(records: &'r [Record]) -> Result<RecordSource<'r>, ClassifyError> {
        Ok(RecordSource {
            in_order: true,
            ..RecordSource::new(records)?
        })
    }

    /// A replay in the records' own order (a request order), each query costing
    /// `tokens_per_query` output tokens whatever its answer used.
    pub fn in_order(
        records: &'r [Record],
        tokens_per_query: u64,
    ) -> Result<RecordSource<'r>, ClassifyError> {
        Ok(RecordSource {
            in_order: true,
            tokens_per_query: Some(tokens_per_query),
            ..RecordSource::new(records)?
        })
    }
}

impl AnswerSource for RecordSource<'_> {
    fn probes(&self) -> Vec<(String, u64)> {
        self.records
            .iter()
            .map(|r| {
                let cost = self.tokens_per_query.unwrap_or_else(|| output_tokens(r));
                (r.probe_id.clone(), cost)
            })
            .collect()
    }
    fn fixed_order(&self) -> bool {
        self.in_order
    }
    fn ask(&mut self, probe_id: &str) -> Result<Record, SourceError> {
        self.records
            .iter()
            .find(|r| r.probe_id == probe_id)
            .cloned()
            .ok_or_else(|| format!("no answer to probe {probe_id}").into())
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use hspi_datasets::{Dataset, Dimension};

    use super::*;
    use crate::verify::{Verdict, VerifyParams};
    use crate::{PlatformModel, ReferenceIndex};

    /// The classifier and references the previous version wrote (tests/data/previous-version):
    /// the tiny LM at f32, f16 and bf16.
    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/previous-version")
            .join(name)
    }

    fn references() -> Vec<Record> {
        ["bf16", "f16", "f32"]
            .iter()
            .flat_map(|f| {
                Dataset::open(fixture(&format!("reference-{f}")))
                    .unwrap()
                    .records()
                    .unwrap()
            })
            .collect()
    }

    /// A provider that serves one format: hspi's own answers at it, without their label.
    struct Mock {
        answers: Vec<Record>,
        asked: usize,
        fail_at: Option<usize>,
        /// Every n-th request goes unanswered (a flaky transport).
        flaky_every: Option<usize>,
        /// Every request after the n-th goes unanswered (the endpoint went down).
        down_after: Option<usize>,
        /// Requests after the n-th would pass the auditor's spending cap.
        cap: Option<usize>,
    }

    impl Mock {
        fn serving(format: &str) -> Mock {
            let answers = references()
                .into_iter()
                .filter(|r| r.platform.as_ref().unwrap().format.to_string() == format)
                .map(|mut r| {
                    r.platform = None;
                    r.target = "mock".into();
                    r
                })
                .collect();
            Mock {
                answers,
                asked: 0,
                fail_at: None,
                flaky_every: None,
                down_after: None,
                cap: None,
            }
        }
    }

    impl AnswerSource for Mock {
        fn probes(&self) -> Vec<(String, u64)> {
            self.answers
                .iter()
                .map(|r| (r.probe_id.clone(), 8))
                .collect()
        }
        fn ask(&mut self, probe_id: &str) -> Result<Record, SourceError> {
            self.asked += 1;
            if self.fail_at == Some(self.asked) {
                return Err("connection reset".into());
            }
            if self.cap.is_some_and(|n| self.asked > n) {
                return Err(Box::new(SpendingCapReached(
                    "spending cap reached: 1 requests".into(),
                )));
            }
            if self
                .flaky_every
                .is_some_and(|n| self.asked.is_multiple_of(n))
            {
                return Err(Box::new(Unanswered("HTTP 503 after 6 attempts".into())));
            }
            if self.down_after.is_some_and(|n| self.asked > n) {
                return Err(Box::new(Unanswered(
                    "cannot connect (connection refused)".into(),
                )));
            }
            Ok(self
                .answers
                .iter()
                .find(|r| r.probe_id == probe_id)
                .cloned()
                .unwrap())
        }
    }

    fn audit(
        claim: &str,
        source: &mut Mock,
        params: VerifyParams,
    ) -> Result<AuditOutcome, ClassifyError> {
        let model = PlatformModel::load(&fixture("classifier.json")).unwrap();
        let refs = references();
        let index = ReferenceIndex::new(&refs);
        let verifier = Verifier::new(&model, &index, claim.parse().unwrap(), params).unwrap();
        let mut seen = 0;
        let outcome = run_audit(verifier, source, &mut |_, _| {
            seen += 1;
            Ok(())
        });
        if let Ok(o) = &outcome {
            assert_eq!(seen, o.records.len(), "every answer reported as it came");
        }
        outcome
    }

    #[test]
    fn a_false_format_claim_is_a_mismatch_on_the_format() {
        let mut provider = Mock::serving("bf16");
        let o = audit("*/candle/f32/*", &mut provider, VerifyParams::default()).unwrap();
        match &o.report.verdict {
            Verdict::Mismatch {
                likely_platform,
                dimensions,
                ..
            } => {
                assert!(likely_platform.contains("/bf16/"), "{likely_platform}");
                assert_eq!(dimensions, &vec![Dimension::Format]);
            }
            v => panic!("{v:?}"),
        }
        assert_eq!(o.records.len(), 2, "stops as soon as the evidence suffices");
        assert_eq!(provider.asked, 2);
    }

    #[test]
    fn the_true_claim_is_consistent() {
        let o = audit(
            "*/candle/bf16/*",
            &mut Mock::serving("bf16"),
            VerifyParams::default(),
        )
        .unwrap();
        assert_eq!(o.report.verdict, Verdict::Consistent);
    }

    #[test]
    fn a_spent_budget_is_inconclusive_never_an_accusation() {
        let params = VerifyParams {
            max_queries: 1,
            min_queries: 1,
            ..VerifyParams::default()
        };
        let o = audit("*/candle/f32/*", &mut Mock::serving("bf16"), params).unwrap();
        assert!(
            matches!(o.report.verdict, Verdict::Inconclusive { .. }),
            "{:?}",
            o.report.verdict
        );
        assert_eq!(o.records.len(), 1);
    }

    #[test]
    fn a_failing_source_stops_the_audit_with_its_error() {
        let mut provider = Mock::serving("bf16");
        provider.fail_at = Some(2);
        let e = audit("*/candle/f32/*", &mut provider, VerifyParams::default())
            .err()
            .expect("the source failed");
        assert!(e.to_string().contains("connection reset"), "{e}");
    }

    #[test]
    fn unanswered_probes_are_skipped_and_counted_and_the_verdict_is_unchanged() {
        for format in ["bf16", "f32"] {
            let steady = audit(
                "*/candle/f32/*",
                &mut Mock::serving(format),
                VerifyParams::default(),
            )
            .unwrap();
            let mut flaky = Mock::serving(format);
            flaky.flaky_every = Some(2);
            let o = audit("*/candle/f32/*", &mut flaky, VerifyParams::default()).unwrap();
            assert_eq!(o.report.verdict, steady.report.verdict, "{format}");
            assert!(!o.unanswered.is_empty(), "{format}");
            assert!(o.unanswered[0].1.contains("503"));
        }
    }

    #[test]
    fn an_endpoint_that_goes_down_stops_the_audit_after_three_unanswered_prompts() {
        let mut provider = Mock::serving("bf16");
        provider.down_after = Some(1);
        let o = audit("*/candle/f32/*", &mut provider, VerifyParams::default()).unwrap();
        assert_eq!(o.records.len(), 1, "the answer before it went down is kept");
        assert_eq!(provider.asked, 1 + DOWN_AFTER, "no prompt asked after");
        assert_eq!(o.unanswered.len(), DOWN_AFTER);
        assert!(o.endpoint_down());
        assert_eq!(o.report.exit_code(), crate::verify::ENDPOINT_DOWN_EXIT);
        let Verdict::Inconclusive { reason } = &o.report.verdict else {
            panic!("{:?}", o.report.verdict)
        };
        assert!(reason.starts_with("the endpoint went down"), "{reason}");
        assert!(reason.contains("connection refused"), "{reason}");
        // A flaky endpoint (every other prompt unanswered) is never taken for one gone down.
        let mut flaky = Mock::serving("bf16");
        flaky.flaky_every = Some(2);
        let o = audit("*/candle/f32/*", &mut flaky, VerifyParams::default()).unwrap();
        assert!(!o.endpoint_down());
    }

    #[test]
    fn a_spending_cap_ends_the_audit_with_a_verdict_on_the_answers_before_it() {
        let mut provider = Mock::serving("bf16");
        provider.cap = Some(1);
        let o = audit("*/candle/f32/*", &mut provider, VerifyParams::default()).unwrap();
        assert_eq!(o.records.len(), 1, "the answer paid for is kept");
        assert_eq!(provider.asked, 2, "nothing asked past the cap");
        assert!(o.report.spending_cap.is_some());
        let Verdict::Inconclusive { reason } = &o.report.verdict else {
            panic!("{:?}", o.report.verdict)
        };
        assert!(reason.starts_with("spending cap reached"), "{reason}");
        assert_eq!(o.report.exit_code(), 3);
    }

    #[test]
    fn records_of_several_targets_are_refused() {
        let refs = references();
        let e = RecordSource::new(&refs).err().expect("several targets");
        assert!(e.to_string().contains("verify one target at a time"), "{e}");
    }
}
