//! The audit report: what was claimed, what the sequential test concluded, which platform the
//! answers point to, and what it cost — as JSON (machine-checkable) and Markdown.

use hspi_classify::verify::{Verdict, VerifyReport};
use hspi_classify::Identification;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub requests: u64,
    pub output_tokens: u64,
    pub cost: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditReport {
    pub hspi_version: String,
    pub created_unix: u64,
    pub endpoint: String,
    pub model: String,
    pub claim: String,
    pub classifier_id: String,
    /// Where every answer received is stored (a dataset directory).
    pub dataset: String,
    pub verification: VerifyReport,
    pub identification: Identification,
    pub spent: Spent,
}

pub fn render_json(r: &AuditReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}

pub fn render_markdown(r: &AuditReport) -> String {
    let v = &r.verification;
    let mut s = format!("# hspi audit: {}\n\n", r.endpoint);
    s.push_str(&format!(
        "| | |\n|---|---|\n| model | {} |\n| claim | `{}` ({}) |\n| verdict | **{}** |\n| confidence | {:.3} |\n| queries | {} ({} output tokens) |\n| spent | {} requests, {} output tokens, cost {:.6} |\n| classifier | {} |\n| answers kept in | `{}` |\n\n",
        r.model,
        r.claim,
        v.claimed.join(", "),
        v.verdict.name(),
        v.confidence,
        v.queries,
        v.output_tokens,
        r.spent.requests,
        r.spent.output_tokens,
        r.spent.cost,
        r.classifier_id,
        r.dataset
    ));
    match &v.verdict {
        Verdict::Mismatch {
            likely_platform, ..
        } => s.push_str(&format!(
            "The answers point to **{likely_platform}**, not the claim.\n\n"
        )),
        Verdict::UnknownPlatform { reason }
        | Verdict::Inconclusive { reason }
        | Verdict::Tampered { reason } => s.push_str(&format!("{reason}\n\n")),
        Verdict::Consistent => s.push_str("The answers are consistent with the claim.\n\n"),
    }
    s.push_str(&format!(
        "## Sequential test\n\nLog-likelihood ratio (best alternative against the claim): {:.2}; mismatch at ≥ {:.2}, consistent at ≤ {:.2}.\n\n| # | probe | evidence | llr | total | nearest |\n|---|---|---|---|---|---|\n",
        v.log_likelihood_ratio, v.thresholds.0, v.thresholds.1
    ));
    for (i, e) in v.evidence.iter().enumerate() {
        s.push_str(&format!(
            "| {} | {} | {}{} | {:+.2} | {:+.2} | {} |\n",
            i + 1,
            &e.probe[..e.probe.len().min(12)],
            e.method,
            if e.integrity.is_empty() {
                String::new()
            } else {
                format!(" (altered: {})", e.integrity.join("; "))
            },
            e.llr,
            e.cumulative_llr,
            e.nearest
        ));
    }
    s.push_str("\n## Identification from the same answers\n\n| class | platform | probability |\n|---|---|---|\n");
    for p in r.identification.posterior.iter().take(5) {
        s.push_str(&format!(
            "| {} | {} | {:.4} |\n",
            p.class, p.name, p.probability
        ));
    }
    s
}
