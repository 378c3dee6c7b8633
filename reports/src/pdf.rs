//! PDF exporter: the report typeset by Typst (a maintained typesetting library, run in-process
//! with its embedded fonts: no browser, TeX or network on the auditor's machine). Title and
//! summary first, then the tables (aligned columns), the same SVG charts as the HTML report with
//! their axes and labels, the evidence appendix, and page numbers.

use crate::comparison;
use crate::report::{Evidence, Report};
use crate::svg;
use crate::typeset::{self, Doc};
use crate::verification_table::dimension_rows;
use hspi_datasets::short_id;

pub struct Pdf;

impl crate::exporter::Exporter for Pdf {
    fn name(&self) -> &'static str {
        "pdf"
    }
    fn render(&self, r: &Report) -> Vec<u8> {
        render(r)
    }
}

/// The report's Typst source and the chart files it includes.
pub fn document(r: &Report) -> Doc {
    let wide = matches!(r.evidence, Evidence::Watch { .. });
    let mut d = Doc::new(&r.title(), wide);
    d.heading(1, &r.title());
    d.summary(&r.summary.verdict, &r.summary.finding);
    let mut facts = vec![["Model".to_string(), r.subject.model_named()]];
    if let Some(c) = &r.subject.claim {
        facts.push(["Claimed platform".into(), c.clone()]);
    }
    if let Some(target) = r.summary.error_target() {
        facts.push(["Error target".into(), target]);
    }
    facts.push([
        "What it cost".into(),
        format!(
            "{} queries, {} requests, {} output tokens, {:.6} in API charges",
            r.spent.queries, r.spent.requests, r.spent.output_tokens, r.spent.cost
        ),
    ]);
    facts.push(["What to do next".into(), r.summary.next_step.clone()]);
    facts.push(["Date".into(), r.created.clone()]);
    facts.push(["Tool".into(), r.tool.clone()]);
    d.table(&["", ""], &facts);
    if !r.contract.is_empty() {
        d.heading(2, "API contract");
        let rows: Vec<[String; 3]> = r
            .contract
            .iter()
            .map(|c| {
                [
                    c.name.clone(),
                    c.status.name().to_string(),
                    c.detail.clone(),
                ]
            })
            .collect();
        d.table(&["check", "status", "detail"], &rows);
    }
    if let Some(draw) = &r.draw {
        d.para(&draw.sentence());
    }
    match &r.evidence {
        Evidence::Watch { comparison: c } => {
            d.heading(2, &format!("Providers side by side ({} rounds)", c.rounds));
            d.table(&comparison::TABLE_HEADER, &comparison::table_rows(c));
        }
        Evidence::Audit { verification, .. } | Evidence::Verify { verification }
            if !verification.dimensions.is_empty() =>
        {
            d.heading(2, "Per claimed dimension");
            d.table(
                &["dimension", "verdict", "claimed", "nearest known", "llr"],
                &dimension_rows(verification),
            );
        }
        _ => {}
    }

    d.page_break();
    d.heading(2, "Appendix A: evidence");
    for chart in svg::charts(r) {
        d.chart(&chart);
    }
    match &r.evidence {
        Evidence::Audit { verification, .. } | Evidence::Verify { verification }
            if !verification.evidence.is_empty() || !verification.dimensions.is_empty() =>
        {
            d.heading(3, "Sequential test");
            d.para(&format!(
                "Claim {} ({}). Log-likelihood ratio {:.2}; mismatch at ≥ {:.2}, consistent at ≤ {:.2}. {} queries, {} output tokens.",
                verification.claim,
                verification.claimed.join(", "),
                verification.log_likelihood_ratio,
                verification.thresholds.0,
                verification.thresholds.1,
                verification.queries,
                verification.output_tokens
            ));
            let rows: Vec<[String; 6]> = verification
                .evidence
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    [
                        (i + 1).to_string(),
                        short_id(&e.probe).to_string(),
                        e.method.to_string(),
                        format!("{:+.2}", e.llr),
                        format!("{:+.2}", e.cumulative_llr),
                        e.nearest.clone(),
                    ]
                })
                .collect();
            d.table(
                &["#", "probe", "evidence", "llr", "total", "nearest"],
                &rows,
            );
            if let Evidence::Audit { dataset, .. } = &r.evidence {
                d.para(&format!("Every answer received is kept in {dataset}."));
            }
        }
        Evidence::Eval { eval } => {
            let rows: Vec<[String; 3]> = eval
                .hspi
                .per_class
                .iter()
                .map(|c| {
                    [
                        c.class.clone(),
                        c.name.clone(),
                        format!("{}/{}", c.correct, c.total),
                    ]
                })
                .collect();
            d.table(&["class", "platform", "correct"], &rows);
        }
        Evidence::Watch { comparison: c } => {
            let changes = c.changes();
            d.heading(
                3,
                &format!(
                    "Changes ({}; a change needs {} net decided rounds)",
                    changes.len(),
                    c.rounds_to_flag
                ),
            );
            if changes.is_empty() {
                d.para("No provider changed what it serves.");
            }
            for (p, ch) in changes {
                d.para(&comparison::change_sentence(p, ch));
                d.table(&comparison::EVIDENCE_HEADER, &comparison::evidence_rows(ch));
            }
            d.para(&format!(
                "Every round's answers and report are kept under {}.",
                c.dir
            ));
        }
        _ => {}
    }

    d.heading(2, "Appendix B: reference atlas");
    if let Some(id) = &r.atlas.classifier_id {
        d.para(&format!("Classifier {id}."));
    }
    d.list(&r.atlas.classes);
    if !r.atlas.references.is_empty() {
        d.para("References (hspi's own recomputation):");
        d.list(&r.atlas.references);
    }
    d.heading(2, "Appendix C: methodology and limitations");
    d.list(&r.methodology);
    d.heading(3, "Limitations");
    d.list(&r.limitations);
    d
}

pub fn render(r: &Report) -> Vec<u8> {
    typeset::pdf(&document(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_looks_like_markup_is_typeset_as_text() {
        let mut d = Doc::new("t", false);
        d.para("#set page(width: 1cm) \"quoted\" \\ $x$ *bold* [link] <label> @ref");
        let pdf = typeset::pdf(&d);
        assert!(pdf.starts_with(b"%PDF"), "a PDF");
    }
}
