//! PDF exporter: the Markdown report typeset as plain pages (PDF 1.4, the standard Helvetica
//! font, no dependencies), with the per-query evidence drawn as bars. Written by hand so the
//! report needs no browser or TeX on the auditor's machine.

use crate::report::{Evidence, Report};

const PAGE_W: f64 = 595.0;
const PAGE_H: f64 = 842.0;
const MARGIN: f64 = 50.0;
const LINE: f64 = 13.0;
const MAX_CHARS: usize = 95;

/// Latin-1 text for the standard fonts; a few typographic signs spelled out.
fn latin1(s: &str) -> String {
    s.replace('—', "-")
        .replace('≥', ">=")
        .replace('≤', "<=")
        .replace('→', "->")
        .replace('−', "-")
        .chars()
        .map(|c| if (c as u32) < 256 { c } else { '?' })
        .collect()
}

fn escape(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for c in latin1(s).chars() {
        match c {
            '(' | ')' | '\\' => {
                out.push(b'\\');
                out.push(c as u8);
            }
            _ => out.push(c as u32 as u8),
        }
    }
    out
}

fn wrap(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in line.split(' ') {
        if cur.chars().count() + word.chars().count() + 1 > MAX_CHARS && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    out.push(cur);
    out
}

/// Per-query llr bars for the first page's evidence chart: (llr, cumulative).
fn bars(r: &Report) -> Vec<(f64, f64)> {
    match &r.evidence {
        Evidence::Audit { verification, .. } | Evidence::Verify { verification } => verification
            .evidence
            .iter()
            .map(|e| (e.llr, e.cumulative_llr))
            .collect(),
        _ => Vec::new(),
    }
}

pub struct Pdf;

impl crate::exporter::Exporter for Pdf {
    fn name(&self) -> &'static str {
        "pdf"
    }
    fn render(&self, r: &Report) -> Vec<u8> {
        render(r)
    }
}

pub fn render(r: &Report) -> Vec<u8> {
    let text = crate::markdown::render(r);
    let mut lines: Vec<(bool, String)> = Vec::new();
    for l in text.lines() {
        let heading = l.starts_with('#');
        if l.starts_with("|---") || l == "| | |" {
            continue;
        }
        // Table rows as cells separated by wide gaps.
        let l = if l.starts_with('|') {
            l.trim_matches('|')
                .split(" | ")
                .map(str::trim)
                .collect::<Vec<_>>()
                .join("   ")
        } else {
            l.to_string()
        };
        let clean = l
            .trim_start_matches('#')
            .trim()
            .replace("**", "")
            .replace('`', "");
        for w in wrap(&clean) {
            lines.push((heading, w));
        }
    }
    let per_page = ((PAGE_H - 2.0 * MARGIN) / LINE) as usize;
    let chart = bars(r);
    let mut pages: Vec<Vec<u8>> = Vec::new();
    let mut first = true;
    let mut rest = &lines[..];
    while !rest.is_empty() || first {
        let mut content = Vec::new();
        let mut budget = per_page;
        if first && !chart.is_empty() {
            content.extend(draw_bars(&chart));
            budget = budget.saturating_sub(14);
        }
        let take = budget.min(rest.len());
        content.extend_from_slice(b"BT\n");
        let top = if first && !chart.is_empty() {
            PAGE_H - MARGIN - 14.0 * LINE
        } else {
            PAGE_H - MARGIN
        };
        content.extend(format!("{MARGIN} {top} Td\n{LINE} TL\n").as_bytes());
        for (heading, l) in &rest[..take] {
            let font = if *heading { "/F2 12" } else { "/F1 9" };
            content.extend(format!("{font} Tf\n(").as_bytes());
            content.extend(escape(l));
            content.extend_from_slice(b") Tj T*\n");
        }
        content.extend_from_slice(b"ET\n");
        pages.push(content);
        rest = &rest[take..];
        first = false;
    }
    assemble(&pages)
}

fn draw_bars(chart: &[(f64, f64)]) -> Vec<u8> {
    let (x0, y0, w, h) = (
        MARGIN,
        PAGE_H - MARGIN - 140.0,
        PAGE_W - 2.0 * MARGIN,
        120.0,
    );
    let hi = chart.iter().map(|c| c.0.max(c.1)).fold(5.0, f64::max);
    let lo = chart.iter().map(|c| c.0.min(c.1)).fold(-5.0, f64::min);
    let y = |v: f64| y0 + h * (v - lo) / (hi - lo);
    let bw = w / chart.len() as f64;
    let mut s = format!(
        "0.3 w 0 0 0 RG {x0} {y0} {w} {h} re S\n{x0} {z} m {x1} {z} l S\n",
        z = y(0.0),
        x1 = x0 + w
    );
    for (i, (llr, _)) in chart.iter().enumerate() {
        let color = if *llr > 0.0 {
            "0.84 0.15 0.16"
        } else {
            "0.17 0.63 0.17"
        };
        let (a, b) = (y(0.0), y(*llr));
        s.push_str(&format!(
            "{color} rg {:.1} {:.1} {:.1} {:.1} re f\n",
            x0 + bw * (i as f64 + 0.2),
            a.min(b),
            bw * 0.6,
            (a - b).abs()
        ));
    }
    s.push_str("1 w 0 0 0 RG ");
    for (i, (_, cum)) in chart.iter().enumerate() {
        let op = if i == 0 { "m" } else { "l" };
        s.push_str(&format!(
            "{:.1} {:.1} {op} ",
            x0 + bw * (i as f64 + 0.5),
            y(*cum)
        ));
    }
    s.push_str("S\n0 0 0 rg BT /F1 8 Tf ");
    s.push_str(&format!("{x0} {} Td (per-query log-likelihood ratio \\(bars\\) and running total \\(line\\)) Tj ET\n", y0 - 10.0));
    s.into_bytes()
}

fn assemble(pages: &[Vec<u8>]) -> Vec<u8> {
    // Objects: 1 catalog, 2 pages, 3 Helvetica, 4 Helvetica-Bold, then (page, content) pairs.
    let mut objects: Vec<Vec<u8>> = Vec::new();
    let kids: Vec<String> = (0..pages.len())
        .map(|i| format!("{} 0 R", 5 + 2 * i))
        .collect();
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    objects.push(
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            kids.join(" "),
            pages.len()
        )
        .into_bytes(),
    );
    objects.push(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    );
    objects.push(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    );
    for (i, content) in pages.iter().enumerate() {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_W} {PAGE_H}] /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents {} 0 R >>",
                6 + 2 * i
            )
            .into_bytes(),
        );
        let mut stream = format!("<< /Length {} >>\nstream\n", content.len()).into_bytes();
        stream.extend_from_slice(content);
        stream.extend_from_slice(b"\nendstream");
        objects.push(stream);
    }
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(o);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for off in offsets {
        out.extend(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}
