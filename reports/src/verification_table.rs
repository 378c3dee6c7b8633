//! The sequential test's verdict and evidence: as a Markdown table (shared by the audit and verify
//! reports) and as the text `hspi verify` prints.

use hspi_classify::verify::{Verdict, VerifyReport};
use hspi_datasets::short_id;

/// The per-dimension verdicts as table rows: dimension, verdict, claimed, nearest known, llr.
pub fn dimension_rows(v: &VerifyReport) -> Vec<[String; 5]> {
    v.dimensions
        .iter()
        .map(|d| {
            [
                d.dimension.to_string(),
                d.status.to_string(),
                d.claimed.clone(),
                d.nearest.clone(),
                d.log_likelihood_ratio
                    .map(|x| format!("{x:+.2}"))
                    .unwrap_or_else(|| "— (no known class differs)".into()),
            ]
        })
        .collect()
}

fn dimensions_markdown(v: &VerifyReport) -> String {
    if v.dimensions.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "### Per claimed dimension

| dimension | verdict | claimed | nearest known | llr |
|---|---|---|---|---|
",
    );
    for row in dimension_rows(v) {
        s.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    s.push('\n');
    s
}

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
    s = s.replacen("| # |", &format!("{}| # |", dimensions_markdown(v)), 1);
    for (i, e) in v.evidence.iter().enumerate() {
        let altered = if e.integrity.is_empty() {
            String::new()
        } else {
            format!(" (altered: {})", e.integrity.join("; "))
        };
        s.push_str(&format!(
            "| {} | {} | {}{altered} | {:+.2} | {:+.2} | {} |\n",
            i + 1,
            short_id(&e.probe),
            e.method,
            e.llr,
            e.cumulative_llr,
            e.nearest
        ));
    }
    s
}

/// What `hspi verify` prints: the verdict, its figures, and one line per answer weighed.
pub fn text(r: &VerifyReport) -> String {
    let mut s = format!(
        "claim: {} ({})\nverdict: {}",
        r.claim,
        r.claimed.join(", "),
        r.verdict.name()
    );
    match &r.verdict {
        Verdict::Mismatch {
            likely_platform, ..
        } => s.push_str(&format!(" — most likely serving {likely_platform}")),
        Verdict::UnknownPlatform { reason }
        | Verdict::Inconclusive { reason }
        | Verdict::Tampered { reason } => s.push_str(&format!(" — {reason}")),
        Verdict::Mixed {
            routes,
            settled,
            unsettled,
        } => s.push_str(&format!(
            " — answers of more than one format: {}",
            hspi_classify::verify::describe_routes(routes, *settled, *unsettled)
        )),
        Verdict::Consistent => {}
    }
    if let Verdict::Mismatch { dimensions, .. } = &r.verdict {
        if !dimensions.is_empty() {
            let names: Vec<&str> = dimensions.iter().map(|d| d.name()).collect();
            s.push_str(&format!("\nclaim fails on: {}", names.join(", ")));
        }
    }
    if let Some(shown) = &r.presentation {
        s.push_str(&format!(
            "\nthis endpoint shows {shown}: references were shown the same way"
        ));
    }
    for d in &r.dimensions {
        s.push_str(&format!("\n  {}", d.line()));
    }
    // The error target a decided verdict was held to: never a probability of cheating.
    let held = match r.verdict {
        hspi_classify::verify::Verdict::Consistent => "false-acceptance",
        hspi_classify::verify::Verdict::Mismatch { .. } => "false-accusation",
        _ => "",
    };
    if !held.is_empty() {
        s.push_str(&format!(
            "\nheld to a {:.1} % {held} target",
            (1.0 - r.confidence) * 100.0
        ));
    }
    s.push_str(&format!(
        "\nlog-likelihood ratio {:.2} (mismatch at ≥ {:.2}, consistent at ≤ {:.2})\nevidence: {} queries, {} output tokens\n",
        r.log_likelihood_ratio, r.thresholds.0, r.thresholds.1, r.queries, r.output_tokens
    ));
    for e in &r.evidence {
        s.push_str(&format!(
            "  {} {:>16} llr {:+.2} (total {:+.2}) nearest {}{}\n",
            short_id(&e.probe),
            e.method,
            e.llr,
            e.cumulative_llr,
            e.nearest,
            if e.integrity.is_empty() {
                String::new()
            } else {
                format!(" ALTERED: {}", e.integrity.join("; "))
            }
        ));
    }
    s
}

/// Repeated audits of one target (`hspi verify --audits N`): verdict and per-dimension counts.
pub fn tally_text(t: &hspi_classify::repeated_audits::AuditTally) -> String {
    let counts = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!(
        "claim: {}\n{} audits (seeds {}..{}), each asking the {} answers in a random order\nverdicts: {}\n",
        t.claim,
        t.audits,
        t.seed,
        t.seed + t.audits as u64 - 1,
        t.answers,
        counts(&t.verdicts)
    );
    for (d, m) in &t.dimensions {
        s.push_str(&format!("  {d}: {}\n", counts(m)));
    }
    s.push_str(&format!(
        "queries per audit: mean {:.1}, at most {}; output tokens: mean {:.1}, at most {}\n",
        t.mean_queries, t.max_queries, t.mean_output_tokens, t.max_output_tokens
    ));
    if let (Some(share), Some(covering)) = (t.routed_share, t.mixed_covering) {
        s.push_str(&format!(
            "routed: {:.0} % of requests answered from the other answers; {} audits mixed, {covering} of them with the share's interval covering it\n",
            100.0 * share,
            t.count("mixed")
        ));
    }
    s
}
