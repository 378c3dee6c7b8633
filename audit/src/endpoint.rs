//! Verify and audit a live endpoint: the collection session is the audit loop's answer source,
//! every answer stored before it is weighed.

use hspi_classify::audit::SourceError;
use hspi_classify::verify::VerifyReport;
use hspi_classify::{run_audit, AnswerSource, SpendingCapReached, Unanswered};
use hspi_collect::session::{EndpointSession, ForcedSession};
use hspi_collect::CollectError;
use hspi_datasets::{short_id, Presentation, ProbeInput, Record};
use hspi_reports::report::{Report, Spent, Subject};

use crate::error::AuditError;
use crate::setup::VerifySetup;
use crate::Lines;

/// The endpoint as the audit's answer source; with a forced session, each answer brings the
/// references hspi computed on its own tokens (kept in `computed`).
struct Endpoint<'s> {
    session: &'s mut EndpointSession,
    forced: Option<&'s mut ForcedSession>,
    computed: Vec<Record>,
}

impl AnswerSource for Endpoint<'_> {
    fn probes(&self) -> Vec<(String, u64)> {
        let tokens = |input: &ProbeInput| match input {
            ProbeInput::Prompt { params, .. } => u64::from(params.max_tokens),
            _ => 0,
        };
        self.session
            .probes
            .probes
            .iter()
            .map(|p| (p.id.clone(), tokens(&p.input)))
            .collect()
    }
    /// A probe the transport failed on (after every retry), or whose bodies never parsed, is
    /// skipped and counted; any other error stops the audit.
    fn ask(&mut self, probe_id: &str) -> Result<Record, SourceError> {
        match self.session.ask(probe_id) {
            Ok(r) => Ok(r),
            Err(e @ (CollectError::Transport { .. } | CollectError::Api { .. })) => {
                Err(Box::new(Unanswered(e.to_string())))
            }
            // The cap ends the audit with a verdict on what was paid for; collect's hint
            // (`--resume`) is not the audit's.
            Err(CollectError::Budget { reached, .. }) => Err(Box::new(SpendingCapReached(
                format!("spending cap reached: {reached}"),
            ))),
            Err(e) => Err(Box::new(e)),
        }
    }
    fn references(&mut self, answer: &Record) -> Result<Vec<Record>, SourceError> {
        let Some(forced) = self.forced.as_mut() else {
            return Ok(Vec::new());
        };
        let refs = forced.references(answer).map_err(Box::new)?;
        self.computed.extend(refs.iter().cloned());
        Ok(refs)
    }
}

/// What an audit says, loudly, when the endpoint turns out to show less than exact logprobs.
fn presentation_warning(shown: Presentation) -> String {
    match shown {
        Presentation::TextOnly => "warning: logprobs were asked for and none came back: this endpoint shows text only. The audit goes on in text-only mode: the greedy texts are compared with the references' texts, which tells apart only formats whose texts differ on the prompts asked".into(),
        Presentation::Rounded(_) => format!(
            "note: this endpoint prints {}: the references are rounded the same way before they are compared (rounding is not tampering)",
            shown.describe()
        ),
        Presentation::Exact => "note: this endpoint prints exact logprobs again".into(),
    }
}

/// A verdict on an endpoint, the answers it weighed and what they cost.
pub struct Verified {
    pub report: VerifyReport,
    pub records: Vec<Record>,
    /// Probes skipped for transport failures, with why.
    pub unanswered: Vec<(String, String)>,
    pub spent: Spent,
    pub subject: Subject,
    /// References computed on the answers' own tokens (fresh-prompt audits; else empty).
    pub references: Vec<Record>,
}

/// Query the endpoint probe by probe in the verifier's order until a verdict or the budget; one
/// status line per answer. The session stays open (a contract check may ask again); the caller
/// seals it.
pub fn verify_endpoint(
    s: &VerifySetup,
    session: &mut EndpointSession,
    model: &str,
    lines: &Lines,
) -> Result<Verified, AuditError> {
    verify_endpoint_forced(s, session, None, model, lines)
}

/// [`verify_endpoint`], each answer weighed against references `forced` computes on its own
/// tokens where given (a fresh-prompt audit).
pub fn verify_endpoint_forced(
    s: &VerifySetup,
    session: &mut EndpointSession,
    forced: Option<&mut ForcedSession>,
    model: &str,
    lines: &Lines,
) -> Result<Verified, AuditError> {
    if !s.model.model.id.eq_ignore_ascii_case(model) {
        (lines.status)(&format!(
            "note: the classifier describes model {}, the endpoint is asked for {model}",
            s.model.model.id
        ));
    }
    let budget = session.budget.clone();
    let mut queries = 0;
    let mut shown = Presentation::Exact;
    let mut source = Endpoint {
        session,
        forced,
        computed: Vec::new(),
    };
    let outcome = run_audit(s.verifier()?, &mut source, &mut |record, v| {
        queries += 1;
        if v.presentation() != shown {
            shown = v.presentation();
            (lines.status)(&presentation_warning(shown));
        }
        let verdict = v.verdict().map(|v| format!(" ({})", v.name()));
        let format = v
            .current_format_llr()
            .map(|f| format!(", format llr {f:+.2}"))
            .unwrap_or_default();
        (lines.status)(&format!(
            "query {queries}: probe {} → llr {:+.2}{format}{}; spent {}",
            short_id(&record.probe_id),
            v.current_llr(),
            verdict.unwrap_or_default(),
            budget.spent()
        ));
        Ok(())
    })?;
    for (probe, why) in &outcome.unanswered {
        (lines.status)(&format!(
            "probe {} unanswered, skipped (counted apart from the verdict): {why}",
            short_id(probe)
        ));
    }
    let url = source.session.url.clone();
    let spent = budget.spent();
    Ok(Verified {
        references: source.computed,
        unanswered: outcome.unanswered,
        spent: Spent {
            queries: outcome.records.len() as u64,
            requests: spent.requests,
            output_tokens: spent.output_tokens,
            cost: spent.cost,
        },
        subject: Subject {
            architecture: None,
            endpoint: Some(url),
            model: model.to_string(),
            claim: Some(outcome.report.claim.clone()),
        },
        report: outcome.report,
        records: outcome.records,
    })
}

/// `hspi verify --endpoint`: the verdict and its report model; the session sealed.
pub fn verify_endpoint_report(
    s: &VerifySetup,
    mut session: EndpointSession,
    model: &str,
    lines: &Lines,
) -> Result<(VerifyReport, Report), AuditError> {
    let v = verify_endpoint(s, &mut session, model, lines)?;
    session.finish()?;
    let report = Report::from_verify(s.context(v.subject, v.spent), v.report.clone());
    Ok((v.report, report))
}

/// Verify + identify against the endpoint, and write audit.json, audit.md and audit.html into
/// the answers' dataset directory.
pub fn audit_endpoint(
    s: &VerifySetup,
    mut session: EndpointSession,
    model: &str,
    lines: &Lines,
) -> Result<Report, AuditError> {
    let v = verify_endpoint(s, &mut session, model, lines)?;
    let out = session.out.clone();
    let transport = crate::contract::transport(
        &session.failures(),
        v.spent.requests,
        &v.unanswered,
        v.records.len(),
        v.report.endpoint_down.as_deref(),
    );
    session.finish()?;
    let report = audit_report(s, v, &out).with_contract(vec![transport], None);
    write_audit(&report, &out, lines)?;
    Ok(report)
}

/// The audit's report: the verdict, and what the classifier names from the same answers kept
/// in `dataset`.
pub(crate) fn audit_report(s: &VerifySetup, v: Verified, dataset: &std::path::Path) -> Report {
    let refs: Vec<&Record> = v.records.iter().collect();
    let identification = s.model.identify(&refs, &s.references);
    let ctx = s.context(v.subject, v.spent);
    Report::from_audit(ctx, v.report, identification, dataset.display().to_string())
}

/// Write audit.json, audit.md and audit.html into `out` (the answers' dataset).
pub(crate) fn write_audit(
    report: &Report,
    out: &std::path::Path,
    lines: &Lines,
) -> Result<(), AuditError> {
    for name in ["json", "md", "html"] {
        let e = hspi_reports::exporter(name)?;
        let path = out.join(format!("audit.{}", e.extension()));
        std::fs::write(&path, e.render(report)).map_err(AuditError::io(&path))?;
    }
    (lines.status)(&format!(
        "audit written to {dir}/audit.json, audit.md and audit.html (PDF: hspi report --from {dir}/audit.json --format pdf --out audit.pdf)",
        dir = out.display()
    ));
    Ok(())
}
