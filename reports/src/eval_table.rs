//! `hspi eval` as Markdown (the HSPI paper's tables for our grid) and JSON.

use hspi_classify::evaluate::{EvalReport, Scores};

pub fn render_json(report: &EvalReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default()
}

fn pct(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{:.1} %", v * 100.0)
    }
}

pub fn render_markdown(r: &EvalReport) -> String {
    let mut s = String::new();
    s.push_str(&format!("# hspi eval: {}\n\n", r.model));
    s.push_str(&format!(
        "{} classes (EQCs), {} training answers, {} test answers; test probes also in training: {}; L2 strength chosen by validation: {}\n\n",
        r.classes.len(), r.train_samples, r.test_samples, r.test_probes_seen, r.alpha
    ));
    s.push_str("## Accuracy against queries per decision\n\n| method | features |");
    let ns: Vec<usize> = r.hspi.by_queries.points.iter().map(|p| p.0).collect();
    for n in &ns {
        s.push_str(&format!(" {n} |"));
    }
    s.push_str("\n|---|---|");
    s.push_str(&"---|".repeat(ns.len()));
    s.push('\n');
    let mut row = |name: &str, sc: &Scores| {
        s.push_str(&format!("| {name} | {} |", sc.features));
        for n in &ns {
            let v = sc
                .by_queries
                .points
                .iter()
                .find(|p| p.0 == *n)
                .map_or(f64::NAN, |p| p.1);
            s.push_str(&format!(" {} |", pct(v)));
        }
        s.push('\n');
    };
    row("hspi", &r.hspi);
    if let Some(b) = &r.baseline {
        row("HSPI baseline", b);
    }
    s.push_str(&format!(
        "| random guess | - |{}\n\n",
        format!(" {} |", pct(r.random_guess)).repeat(ns.len())
    ));
    if !r.hspi.per_dimension.is_empty() {
        s.push_str(
            "## Per dimension (the most probable class has the served value)\n\n| dimension |",
        );
        for n in &ns {
            s.push_str(&format!(" {n} |"));
        }
        s.push_str("\n|---|");
        s.push_str(&"---|".repeat(ns.len()));
        s.push('\n');
        for (d, curve) in &r.hspi.per_dimension {
            s.push_str(&format!("| {d} |"));
            for n in &ns {
                let v = curve.iter().find(|p| p.0 == *n).map_or(f64::NAN, |p| p.1);
                s.push_str(&format!(" {} |", pct(v)));
            }
            s.push('\n');
        }
        s.push('\n');
    }
    s.push_str("## Per class (one query)\n\n| class | platform | correct | accuracy |\n|---|---|---|---|\n");
    for c in &r.hspi.per_class {
        s.push_str(&format!(
            "| {} | {} | {}/{} | {} |\n",
            c.class,
            c.name,
            c.correct,
            c.total,
            pct(c.correct as f64 / c.total.max(1) as f64)
        ));
    }
    s.push_str("\n## Confusion (one query; rows true, columns predicted)\n\n|   |");
    for c in &r.classes {
        s.push_str(&format!(" {} |", c.id));
    }
    s.push_str(" unknown |\n|---|");
    s.push_str(&"---|".repeat(r.classes.len() + 1));
    s.push('\n');
    for (i, c) in r.classes.iter().enumerate() {
        s.push_str(&format!("| {} |", c.id));
        for v in &r.hspi.confusion[i] {
            s.push_str(&format!(" {v} |"));
        }
        s.push('\n');
    }
    s.push_str(&format!(
        "\n## Exact-match path on replayed training probes\n\n{} of {} answers named their class bit for bit ({}).\n",
        r.exact_replay.0,
        r.exact_replay.1,
        pct(r.exact_replay.0 as f64 / r.exact_replay.1.max(1) as f64)
    ));
    s.push_str("\n## Unknown platforms (each class held out of training in turn)\n\n| held-out class | platform |");
    let qs: Vec<usize> = r.known_flagged_unknown.iter().map(|p| p.0).collect();
    for n in &qs {
        s.push_str(&format!(" flagged unknown, {n} q |"));
    }
    for n in &qs {
        s.push_str(&format!(" format named, {n} q |"));
    }
    s.push_str("\n|---|---|");
    s.push_str(&"---|".repeat(2 * qs.len()));
    s.push('\n');
    for h in &r.held_out {
        s.push_str(&format!("| {} | {} |", h.class, h.name));
        for (_, v) in h.flagged_unknown.iter().chain(&h.format_named) {
            s.push_str(&format!(" {} |", pct(*v)));
        }
        s.push('\n');
    }
    s.push_str("| (known classes, false alarms) | - |");
    for (_, v) in &r.known_flagged_unknown {
        s.push_str(&format!(" {} |", pct(*v)));
    }
    s.push_str(&" - |".repeat(qs.len()));
    s.push('\n');
    if let Some((name, t)) = &r.transfer {
        s.push_str(&format!(
            "\n## Cross-model transfer (trained on {}, tested on {name})\n\none query: {}; ",
            r.model,
            pct(t.single_query)
        ));
        let pts: Vec<String> = t
            .by_queries
            .points
            .iter()
            .map(|(n, a, _)| format!("{n} q: {}", pct(*a)))
            .collect();
        s.push_str(&pts.join(", "));
        s.push('\n');
    }
    s
}
