//! Self-contained HTML exporter: inline CSS and SVG, no scripts, no external assets; the first
//! screen is the executive summary, the evidence follows as appendices; readable when printed.

use crate::exporter::Exporter;
use crate::report::{Evidence, Report};

pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }
    fn render(&self, r: &Report) -> Vec<u8> {
        render(r).into_bytes()
    }
}
use crate::comparison::{self, Comparison};
use crate::svg::{self, escape};
use hspi_datasets::short_id;

const STYLE: &str = "body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.45}h1{font-size:1.6rem}h2{border-bottom:1px solid #ccc;padding-bottom:.2rem;margin-top:2rem}.summary{border:2px solid #444;border-radius:8px;padding:1rem 1.4rem;background:#fafafa}.verdict{font-size:1.5rem;font-weight:bold;text-transform:uppercase}.consistent,.identified,.evaluated{color:#1a7f37}.mismatch,.tampered,.mixed{color:#b42318}.unknown,.inconclusive{color:#9a6700}table{border-collapse:collapse;margin:.6rem 0}td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left;font-size:.9rem}figure{margin:1rem 0}figcaption{font-size:.85rem;color:#555}code{font-size:.9em}@media print{body{margin:0;max-width:none}.appendix{break-before:page}}";

fn row(k: &str, v: &str) -> String {
    format!("<tr><th>{}</th><td>{}</td></tr>", escape(k), v)
}

pub fn render(r: &Report) -> String {
    let title = r.title();
    let verdict_class = r
        .summary
        .verdict
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string();
    let mut s = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>{STYLE}</style></head><body>",
        t = escape(&title)
    );
    s.push_str(&format!("<h1>{}</h1>", escape(&title)));
    s.push_str("<section class=\"summary\" id=\"summary\"><h2>Summary</h2>");
    s.push_str(&format!(
        "<p class=\"verdict {verdict_class}\">{}</p><p>{}</p><table>",
        escape(&r.summary.verdict),
        escape(&r.summary.finding)
    ));
    s.push_str(&row("Model", &escape(&r.subject.model_named())));
    if let Some(c) = &r.subject.claim {
        s.push_str(&row(
            "Claimed platform",
            &format!("<code>{}</code>", escape(c)),
        ));
    }
    if let Some(target) = r.summary.error_target() {
        s.push_str(&row("Error target", &escape(&target)));
    }
    s.push_str(&row(
        "What it cost",
        &format!(
            "{} queries, {} requests, {} output tokens, {:.6} in API charges",
            r.spent.queries, r.spent.requests, r.spent.output_tokens, r.spent.cost
        ),
    ));
    s.push_str(&row("What to do next", &escape(&r.summary.next_step)));
    s.push_str(&row("Date", &escape(&r.created)));
    s.push_str(&row("Tool", &escape(&r.tool)));
    s.push_str("</table></section>");
    if !r.contract.is_empty() {
        s.push_str(&crate::contract::html(&r.contract, &|t| escape(t)));
    }
    if let Some(d) = &r.draw {
        s.push_str(&format!("<p>{}</p>", escape(&d.sentence())));
    }

    s.push_str("<section class=\"appendix\"><h2>Appendix A: evidence</h2>");
    if let Evidence::Watch { comparison } = &r.evidence {
        s.push_str(&watch_tables(comparison));
    }
    for chart in svg::charts(r) {
        s.push_str(&chart.figure());
    }
    match &r.evidence {
        Evidence::Audit {
            verification,
            dataset,
            ..
        } => {
            s.push_str(&verification_table(verification));
            s.push_str(&format!(
                "<p>Every answer received is kept in <code>{}</code>.</p>",
                escape(dataset)
            ));
        }
        Evidence::Verify { verification } => {
            s.push_str(&verification_table(verification));
        }
        Evidence::Identify { .. } => {}
        Evidence::Eval { eval } => {
            s.push_str("<table><tr><th>class</th><th>platform</th><th>correct</th></tr>");
            for c in &eval.hspi.per_class {
                s.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td>{}/{}</td></tr>",
                    escape(&c.class),
                    escape(&c.name),
                    c.correct,
                    c.total
                ));
            }
            s.push_str("</table>");
        }
        Evidence::Watch { comparison } => {
            s.push_str(&changes_html(comparison));
            s.push_str(&format!(
                "<p>Every round's answers and report are kept under <code>{}</code>.</p>",
                escape(&comparison.dir)
            ));
        }
    }
    s.push_str("</section><section class=\"appendix\"><h2>Appendix B: reference atlas</h2>");
    if let Some(id) = &r.atlas.classifier_id {
        s.push_str(&format!("<p>Classifier <code>{}</code>.</p>", escape(id)));
    }
    s.push_str("<ul>");
    for c in &r.atlas.classes {
        s.push_str(&format!("<li>{}</li>", escape(c)));
    }
    s.push_str("</ul>");
    if !r.atlas.references.is_empty() {
        s.push_str("<p>References (hspi's own recomputation):</p><ul>");
        for c in &r.atlas.references {
            s.push_str(&format!("<li><code>{}</code></li>", escape(c)));
        }
        s.push_str("</ul>");
    }
    s.push_str("</section><section class=\"appendix\"><h2>Appendix C: methodology and limitations</h2><ul>");
    for m in &r.methodology {
        s.push_str(&format!("<li>{}</li>", escape(m)));
    }
    s.push_str("</ul><h3>Limitations</h3><ul>");
    for l in &r.limitations {
        s.push_str(&format!("<li>{}</li>", escape(l)));
    }
    s.push_str("</ul></section></body></html>\n");
    s
}

fn verification_table(v: &hspi_classify::verify::VerifyReport) -> String {
    let mut s = format!(
        "<p>Claim <code>{}</code> ({}); log-likelihood ratio {:.2} (mismatch at ≥ {:.2}, consistent at ≤ {:.2}).</p><table><tr><th>#</th><th>probe</th><th>evidence</th><th>llr</th><th>total</th><th>nearest</th></tr>",
        escape(&v.claim),
        escape(&v.claimed.join(", ")),
        v.log_likelihood_ratio,
        v.thresholds.0,
        v.thresholds.1
    );
    let dimensions = crate::verification_table::dimension_rows(v);
    if !dimensions.is_empty() {
        let mut t = String::from("<h3>Per claimed dimension</h3><table><tr><th>dimension</th><th>verdict</th><th>claimed</th><th>nearest known</th><th>llr</th></tr>");
        for row in dimensions {
            t.push_str(&format!(
                "<tr><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&row[0]),
                escape(&row[1]),
                escape(&row[1]),
                escape(&row[2]),
                escape(&row[3]),
                escape(&row[4])
            ));
        }
        t.push_str("</table>");
        s = s.replacen("<table>", &format!("{t}<table>"), 1);
    }
    for (i, e) in v.evidence.iter().enumerate() {
        let altered = if e.integrity.is_empty() {
            String::new()
        } else {
            format!(" (altered: {})", escape(&e.integrity.join("; ")))
        };
        s.push_str(&format!(
            "<tr><td>{}</td><td><code>{}</code></td><td>{}{altered}</td><td>{:+.2}</td><td>{:+.2}</td><td>{}</td></tr>",
            i + 1,
            escape(short_id(&e.probe)),
            escape(&e.method),
            e.llr,
            e.cumulative_llr,
            escape(&e.nearest)
        ));
    }
    s.push_str("</table>");
    s
}

fn table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    let mut s = String::from("<table><tr>");
    for h in header {
        s.push_str(&format!("<th>{}</th>", escape(h)));
    }
    s.push_str("</tr>");
    for row in rows {
        s.push_str("<tr>");
        for cell in row {
            s.push_str(&format!("<td>{}</td>", escape(cell)));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    s
}

/// The side-by-side table, on the summary's page.
fn watch_tables(c: &Comparison) -> String {
    format!(
        "<h3>Providers side by side ({} rounds)</h3>{}",
        c.rounds,
        table(&comparison::TABLE_HEADER, &comparison::table_rows(c))
    )
}

fn changes_html(c: &Comparison) -> String {
    let changes = c.changes();
    let mut s = format!(
        "<h3>Changes ({}; a change needs {} net decided rounds)</h3>",
        changes.len(),
        c.rounds_to_flag
    );
    if changes.is_empty() {
        s.push_str("<p>No provider changed what it serves.</p>");
    }
    for (p, ch) in changes {
        s.push_str(&format!(
            "<p>{}</p>",
            escape(&comparison::change_sentence(p, ch))
        ));
        s.push_str(&table(
            &comparison::EVIDENCE_HEADER,
            &comparison::evidence_rows(ch),
        ));
    }
    s
}
