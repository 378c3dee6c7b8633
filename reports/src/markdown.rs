//! Markdown exporter: summary first, then the evidence tables.

use crate::exporter::Exporter;
use crate::report::{Evidence, Report};

pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "md"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["markdown"]
    }
    fn render(&self, r: &Report) -> Vec<u8> {
        render(r).into_bytes()
    }
}

pub fn render(r: &Report) -> String {
    let mut s = String::new();
    s.push_str(&format!("# {}\n\n## Summary\n\n", r.title()));
    s.push_str(&format!(
        "**{}** — {}\n\n",
        r.summary.verdict, r.summary.finding
    ));
    s.push_str("| | |\n|---|---|\n");
    s.push_str(&format!("| model | {} |\n", r.subject.model_named()));
    if let Some(c) = &r.subject.claim {
        s.push_str(&format!("| claim | `{c}` |\n"));
    }
    if let Some(target) = r.summary.error_target() {
        s.push_str(&format!("| error target | {target} |\n"));
    }
    s.push_str(&format!(
        "| spent | {} queries, {} requests, {} output tokens, cost {:.6} |\n| next step | {} |\n| date | {} |\n| tool | {} |\n\n",
        r.spent.queries, r.spent.requests, r.spent.output_tokens, r.spent.cost, r.summary.next_step, r.created, r.tool
    ));
    match &r.evidence {
        Evidence::Audit {
            verification,
            identification,
            dataset,
        } => {
            s.push_str(&crate::verification_table::markdown(verification));
            s.push_str(&format!("\nAnswers kept in `{dataset}`.\n\n## Identification from the same answers\n\n| class | platform | probability |\n|---|---|---|\n"));
            for p in identification.posterior.iter().take(5) {
                s.push_str(&format!(
                    "| {} | {} | {:.4} |\n",
                    p.class, p.name, p.probability
                ));
            }
        }
        Evidence::Verify { verification } => {
            s.push_str(&crate::verification_table::markdown(verification))
        }
        Evidence::Identify { identifications } => {
            s.push_str("## Identifications\n\n");
            s.push_str(&crate::identification::render_text(identifications));
        }
        Evidence::Eval { eval } => s.push_str(&crate::eval_table::render_markdown(eval)),
        Evidence::Watch { comparison } => s.push_str(&watch(comparison)),
    }
    if !r.contract.is_empty() {
        s.push_str(&crate::contract::markdown(&r.contract));
    }
    if let Some(d) = &r.draw {
        s.push_str(&format!("\nProbes: {}\n", d.sentence()));
    }
    s.push_str("\n## Reference atlas\n\n");
    if let Some(id) = &r.atlas.classifier_id {
        s.push_str(&format!("Classifier `{id}`; "));
    }
    s.push_str(&format!("{} known classes:\n\n", r.atlas.classes.len()));
    for c in &r.atlas.classes {
        s.push_str(&format!("- {c}\n"));
    }
    s.push_str("\n## Methodology\n\n");
    for m in &r.methodology {
        s.push_str(&format!("- {m}\n"));
    }
    s.push_str("\n## Limitations\n\n");
    for l in &r.limitations {
        s.push_str(&format!("- {l}\n"));
    }
    s
}

fn table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    let mut s = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(N));
    for row in rows {
        s.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    s
}

fn watch(c: &crate::comparison::Comparison) -> String {
    use crate::comparison::{
        change_sentence, evidence_rows, table_rows, EVIDENCE_HEADER, TABLE_HEADER,
    };
    let mut s = format!(
        "## Providers side by side ({} rounds)\n\n{}\n## Changes\n\n",
        c.rounds,
        table(&TABLE_HEADER, &table_rows(c))
    );
    let changes = c.changes();
    if changes.is_empty() {
        s.push_str("No provider changed what it serves.\n");
    }
    for (p, ch) in changes {
        s.push_str(&format!(
            "{}\n\n{}\n",
            change_sentence(p, ch),
            table(&EVIDENCE_HEADER, &evidence_rows(ch))
        ));
    }
    s.push_str(&format!(
        "\nEvery round's answers and report are under `{}`.\n",
        c.dir
    ));
    s
}
