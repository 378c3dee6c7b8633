//! The sequential test's evidence as a Markdown table (shared by the audit and verify reports).

use hspi_classify::verify::VerifyReport;

pub fn markdown(v: &VerifyReport) -> String {
    let mut s = format!(
        "## Sequential test\n\nClaim `{}` ({}). Log-likelihood ratio (best alternative against the claim): {:.2}; mismatch at ≥ {:.2}, consistent at ≤ {:.2}. {} queries, {} output tokens.\n\n| # | probe | evidence | llr | total | nearest |\n|---|---|---|---|---|---|\n",
        v.claim,
        v.claimed.join(", "),
        v.log_likelihood_ratio,
        v.thresholds.0,
        v.thresholds.1,
        v.queries,
        v.output_tokens
    );
    for (i, e) in v.evidence.iter().enumerate() {
        let altered = if e.integrity.is_empty() {
            String::new()
        } else {
            format!(" (altered: {})", e.integrity.join("; "))
        };
        s.push_str(&format!(
            "| {} | {} | {}{altered} | {:+.2} | {:+.2} | {} |\n",
            i + 1,
            &e.probe[..e.probe.len().min(12)],
            e.method,
            e.llr,
            e.cumulative_llr,
            e.nearest
        ));
    }
    s
}
