//! `hspi identify` output: one block per target, or JSON.

use hspi_classify::{Decision, Identification};

pub fn render_json(ids: &[Identification]) -> String {
    serde_json::to_string_pretty(ids).unwrap_or_default()
}

pub fn render_text(ids: &[Identification]) -> String {
    let mut s = String::new();
    for id in ids {
        s.push_str(&format!("target: {}\n", id.target));
        if let Some(l) = &id.label {
            s.push_str(&format!("  labelled: {l}\n"));
        }
        let verdict = match &id.decision {
            Decision::Identified { class, name } => format!("{class} {name}"),
            Decision::OneOf { classes } => format!("one of {}", classes.join(", ")),
            Decision::Unknown { reason } => format!("unknown platform: {reason}"),
        };
        s.push_str(&format!("  identified: {verdict}\n"));
        if !id.nearest.is_empty() {
            let label = if id.is_unknown() {
                "nearest known"
            } else {
                "per dimension"
            };
            let values: Vec<String> = id.nearest.iter().map(|(d, v)| format!("{d} {v}")).collect();
            s.push_str(&format!("  {label}: {}\n", values.join(", ")));
        }
        s.push_str(&format!(
            "  evidence: {} queries, {} output tokens, {}",
            id.queries, id.output_tokens, id.method
        ));
        if let Some(score) = id.open_set_score {
            s.push_str(&format!(
                " (open-set score {score:.2}, threshold {:.2})",
                id.open_set_threshold
            ));
        }
        s.push('\n');
        if id.without_references > 0 {
            s.push_str(&format!(
                "  warning: {} queries had no reference answers\n",
                id.without_references
            ));
        }
        for p in id.posterior.iter().take(5) {
            s.push_str(&format!(
                "    {:>7.3} %  {} {}\n",
                p.probability * 100.0,
                p.class,
                p.name
            ));
        }
    }
    s
}
