//! Inline SVG charts (no scripts, no external assets): posterior against queries, per-query
//! evidence, confusion heatmap, accuracy against queries, posterior bars.

use hspi_classify::dimension_verdict::DimensionStatus;
use hspi_classify::evaluate::EvalReport;
use hspi_classify::verify::{Verdict, VerifyReport};
use hspi_classify::Identification;
use hspi_datasets::Dimension;

use crate::comparison::ProviderRow;
use crate::report::{Evidence, Report};

const W: f64 = 640.0;
const H: f64 = 260.0;
const PAD: f64 = 44.0;
const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One chart: a standalone SVG document (embedded as is in HTML, typeset as an image in PDF)
/// and its caption.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub svg: String,
}

impl Chart {
    /// The chart as an HTML figure with its caption.
    pub fn figure(&self) -> String {
        format!(
            "<figure>{}<figcaption>{}</figcaption></figure>",
            self.svg,
            escape(&self.title)
        )
    }
}

fn frame(title: &str, body: &str, height: f64) -> Chart {
    Chart {
        title: title.to_string(),
        svg: format!(
            r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="{W}" height="{height}" role="img" aria-label="{t}" font-family="sans-serif"><rect x="0" y="0" width="{W}" height="{height}" fill="#fff"/>{body}</svg>"##,
            t = escape(title)
        ),
    }
}

/// Tick labels under the x axis at the first, middle and last of `n` points (labelled from 1;
/// `x` places the point of index i).
fn count_ticks(n: usize, x: impl Fn(usize) -> f64) -> String {
    let mut at = vec![1, n.div_ceil(2), n];
    at.dedup();
    at.iter()
        .map(|k| {
            let x = x(*k - 1);
            format!(
                r##"<line x1="{x:.1}" y1="{b}" x2="{x:.1}" y2="{t}" stroke="#333"/><text x="{x:.1}" y="{ty}" font-size="10" text-anchor="middle">{k}</text>"##,
                b = H - PAD,
                t = H - PAD + 4.0,
                ty = H - PAD + 15.0
            )
        })
        .collect()
}

/// Tick labels on the y axis at `values` of a [lo, hi] scale.
fn value_ticks(values: &[f64], lo: f64, hi: f64) -> String {
    values
        .iter()
        .map(|v| {
            let y = sy(*v, lo, hi);
            format!(r##"<line x1="{a}" y1="{y:.1}" x2="{PAD}" y2="{y:.1}" stroke="#333"/><text x="{t}" y="{ty:.1}" font-size="10" text-anchor="end">{v:.1}</text>"##, a = PAD - 4.0, t = PAD - 6.0, ty = y + 3.0)
        })
        .collect()
}

fn axes(x_label: &str, y_label: &str) -> String {
    format!(
        r##"<line x1="{PAD}" y1="{b}" x2="{r}" y2="{b}" stroke="#333"/><line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{b}" stroke="#333"/><text x="{cx}" y="{ly}" font-size="12" text-anchor="middle">{x}</text><text x="12" y="{cy}" font-size="12" text-anchor="middle" transform="rotate(-90 12 {cy})">{y}</text>"##,
        b = H - PAD,
        r = W - PAD,
        cx = W / 2.0,
        ly = H - 8.0,
        cy = H / 2.0,
        x = escape(x_label),
        y = escape(y_label)
    )
}

/// A report's charts, in the order every exporter shows them.
pub fn charts(r: &Report) -> Vec<Chart> {
    match &r.evidence {
        Evidence::Audit {
            verification,
            identification,
            ..
        } => vec![
            posterior_chart(verification),
            evidence_chart(verification),
            posterior_bars(identification),
        ],
        Evidence::Verify { verification } => {
            vec![posterior_chart(verification), evidence_chart(verification)]
        }
        Evidence::Identify { identifications } => {
            identifications.iter().map(posterior_bars).collect()
        }
        Evidence::Eval { eval } => vec![accuracy_chart(eval), confusion_heatmap(eval)],
        Evidence::Watch { comparison } => comparison
            .providers
            .iter()
            .map(|p| watch_chart(p, comparison.rounds))
            .collect(),
    }
    .into_iter()
    .flatten()
    .collect()
}

/// Tick labels 0, 0.5 and 1 on a probability axis.
fn unit_ticks() -> String {
    [0.0, 0.5, 1.0]
        .iter()
        .map(|v| {
            let y = sy(*v, 0.0, 1.0);
            format!(r##"<line x1="{a}" y1="{y:.1}" x2="{PAD}" y2="{y:.1}" stroke="#333"/><text x="{t}" y="{ty:.1}" font-size="10" text-anchor="end">{v}</text>"##, a = PAD - 4.0, t = PAD - 6.0, ty = y + 3.0)
        })
        .collect()
}

fn sx(i: f64, n: f64) -> f64 {
    PAD + (W - 2.0 * PAD) * if n <= 1.0 { 0.5 } else { i / (n - 1.0) }
}

fn sy(v: f64, lo: f64, hi: f64) -> f64 {
    let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
    H - PAD - (H - 2.0 * PAD) * t.clamp(0.0, 1.0)
}

/// Posterior of the leading classes after each query.
pub fn posterior_chart(v: &VerifyReport) -> Option<Chart> {
    let n = v.evidence.len();
    let last = v.evidence.last()?;
    let mut order: Vec<usize> = (0..last.posterior.len()).collect();
    order.sort_by(|a, b| last.posterior[*b].total_cmp(&last.posterior[*a]));
    let mut body = axes("queries spent", "probability");
    body.push_str(&unit_ticks());
    body.push_str(&count_ticks(n, |i| sx(i as f64, n as f64)));
    for (k, c) in order.iter().take(4).enumerate() {
        let pts: Vec<String> = v
            .evidence
            .iter()
            .enumerate()
            .map(|(i, e)| {
                format!(
                    "{:.1},{:.1}",
                    sx(i as f64, n as f64),
                    sy(e.posterior.get(*c).copied().unwrap_or(0.0), 0.0, 1.0)
                )
            })
            .collect();
        let color = COLORS[k % COLORS.len()];
        body.push_str(&format!(
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        ));
        let name = v.classes.get(*c).cloned().unwrap_or_default();
        body.push_str(&format!(
            r#"<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/><text x="{tx}" y="{ty}" font-size="11">{}</text>"#,
            escape(&name),
            x = PAD + 8.0,
            y = 8.0 + 14.0 * k as f64,
            tx = PAD + 22.0,
            ty = 17.0 + 14.0 * k as f64
        ));
    }
    // The posterior is relative to the known classes: where the answers fit none of them (an
    // unknown platform, a format no reference covers), the chart must not read as a naming.
    let fits_none = matches!(v.verdict, Verdict::UnknownPlatform { .. })
        || v.dimensions.iter().any(|d| d.unseen);
    let title = if fits_none {
        "Posterior among the known platforms only (the answers fit none of them) against queries spent"
    } else {
        "Posterior over platforms against queries spent"
    };
    Some(frame(title, &body, H))
}

/// Each query's log-likelihood ratio (bars) and the running total against the thresholds; where
/// the format is weighed on evidence of its own, its running ratio and thresholds too (the
/// format can be decided while the platform classes are not, and the other way round).
pub fn evidence_chart(v: &VerifyReport) -> Option<Chart> {
    let n = v.evidence.len();
    if n == 0 {
        return None;
    }
    let (hi_t, lo_t) = v.thresholds;
    let format: Option<((f64, f64), Vec<f64>)> = v.format_thresholds.and_then(|t| {
        let values: Option<Vec<f64>> = v.evidence.iter().map(|e| e.format_llr).collect();
        values.map(|values| (t, values))
    });
    let extra: Vec<f64> = format
        .iter()
        .flat_map(|((hi, lo), values)| values.iter().copied().chain([*hi, *lo]))
        .collect();
    let hi = v
        .evidence
        .iter()
        .map(|e| e.cumulative_llr.max(e.llr))
        .chain(extra.iter().copied())
        .fold(hi_t, f64::max)
        + 0.5;
    let lo = v
        .evidence
        .iter()
        .map(|e| e.cumulative_llr.min(e.llr))
        .chain(extra.iter().copied())
        .fold(lo_t, f64::min)
        - 0.5;
    let mut body = axes("query", "log-likelihood ratio (nats, alternative vs claim)");
    body.push_str(&value_ticks(&[lo_t, 0.0, hi_t], lo, hi));
    let zero = sy(0.0, lo, hi);
    let band = (W - 2.0 * PAD) / n as f64;
    let bx = |i: usize| PAD + band * (i as f64 + 0.5);
    let bw = band * 0.6;
    body.push_str(&count_ticks(n, bx));
    for (i, e) in v.evidence.iter().enumerate() {
        let x = bx(i) - bw / 2.0;
        let y = sy(e.llr, lo, hi);
        let (top, h) = if y < zero {
            (y, zero - y)
        } else {
            (zero, y - zero)
        };
        let color = if e.llr > 0.0 { "#d62728" } else { "#2ca02c" };
        body.push_str(&format!(r#"<rect x="{x:.1}" y="{top:.1}" width="{bw:.1}" height="{h:.1}" fill="{color}" opacity="0.6"/>"#));
    }
    let line = |values: &[f64], style: &str| {
        let pts: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", bx(i), sy(*v, lo, hi)))
            .collect();
        format!(
            r#"<polyline fill="none" {style} stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        )
    };
    let classes: Vec<f64> = v.evidence.iter().map(|e| e.cumulative_llr).collect();
    body.push_str(&line(&classes, r##"stroke="#000""##));
    let mut thresholds = vec![
        (hi_t, "mismatch".to_string()),
        (lo_t, "consistent".to_string()),
    ];
    let mut legend = vec![("#000", "platform classes")];
    if let Some(((f_hi, f_lo), values)) = &format {
        body.push_str(&line(
            values,
            r##"stroke="#1f77b4" stroke-dasharray="6 3""##,
        ));
        // Where the answers are a format no reference covers, the ratio weighs sizes only.
        legend.push((
            "#1f77b4",
            if v.dimensions.iter().any(|d| d.unseen) {
                "format, by size only (the answers carry no known format's pattern)"
            } else {
                "format"
            },
        ));
        if (f_hi - hi_t).abs() > 1e-9 {
            thresholds.push((*f_hi, "format mismatch".to_string()));
        }
        if (f_lo - lo_t).abs() > 1e-9 {
            thresholds.push((*f_lo, "format consistent".to_string()));
        }
    }
    for (t, label) in thresholds {
        let y = sy(t, lo, hi);
        body.push_str(&format!(
            r##"<line x1="{PAD}" y1="{y:.1}" x2="{r}" y2="{y:.1}" stroke="#555" stroke-dasharray="4 3"/><text x="{tx}" y="{ty:.1}" font-size="11" text-anchor="end">{label}</text>"##,
            r = W - PAD,
            tx = W - PAD,
            ty = y - 3.0
        ));
    }
    if legend.len() > 1 {
        for (k, (color, name)) in legend.iter().enumerate() {
            body.push_str(&format!(
                r#"<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/><text x="{tx}" y="{ty}" font-size="11">{name}</text>"#,
                x = PAD + 8.0,
                y = 8.0 + 14.0 * k as f64,
                tx = PAD + 22.0,
                ty = 17.0 + 14.0 * k as f64
            ));
        }
    }
    let title = if legend.len() > 1 {
        "Per-query evidence and running totals: platform classes and format"
    } else {
        "Per-query evidence and running total"
    };
    Some(frame(title, &body, H))
}

pub fn accuracy_chart(e: &EvalReport) -> Option<Chart> {
    let pts = &e.hspi.by_queries.points;
    let n = pts.len();
    if n == 0 {
        return None;
    }
    let mut body = axes("queries per decision", "accuracy");
    body.push_str(&unit_ticks());
    let mut series = vec![("hspi", pts.clone())];
    if let Some(b) = &e.baseline {
        series.push(("HSPI baseline", b.by_queries.points.clone()));
    }
    series.push((
        "random guess",
        pts.iter().map(|p| (p.0, e.random_guess, p.2)).collect(),
    ));
    for (k, (name, s)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let line: Vec<String> = s
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{:.1},{:.1}", sx(i as f64, n as f64), sy(p.1, 0.0, 1.0)))
            .collect();
        body.push_str(&format!(
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            line.join(" ")
        ));
        body.push_str(&format!(
            r#"<text x="{x}" y="{y}" font-size="11" fill="{color}">{name}</text>"#,
            x = PAD + 8.0,
            y = 14.0 + 14.0 * k as f64
        ));
    }
    for (i, p) in pts.iter().enumerate() {
        body.push_str(&format!(
            r#"<text x="{:.1}" y="{}" font-size="10" text-anchor="middle">{}</text>"#,
            sx(i as f64, n as f64),
            H - PAD + 14.0,
            p.0
        ));
    }
    Some(frame("Accuracy against queries per decision", &body, H))
}

/// Confusion matrix (one query) as a heatmap; the last column is "unknown".
pub fn confusion_heatmap(e: &EvalReport) -> Option<Chart> {
    let k = e.classes.len();
    if k == 0 {
        return None;
    }
    let cell = ((W - 2.0 * PAD) / (k + 1) as f64).min(28.0);
    let height = PAD * 2.0 + cell * k as f64;
    let mut body = String::new();
    for (i, row) in e.hspi.confusion.iter().enumerate() {
        let total: usize = row.iter().sum::<usize>().max(1);
        for (j, v) in row.iter().enumerate() {
            let share = *v as f64 / total as f64;
            let shade = (255.0 * (1.0 - share)) as u8;
            body.push_str(&format!(
                r##"<rect x="{:.1}" y="{:.1}" width="{cell:.1}" height="{cell:.1}" fill="rgb({shade},{shade},255)" stroke="#ccc"><title>{} → {}: {v}</title></rect>"##,
                PAD + cell * j as f64,
                PAD + cell * i as f64,
                escape(&e.classes[i].id),
                e.classes.get(j).map_or("unknown".to_string(), |c| c.id.clone())
            ));
        }
        body.push_str(&format!(
            r#"<text x="{:.1}" y="{:.1}" font-size="9" text-anchor="end">{}</text>"#,
            PAD - 3.0,
            PAD + cell * (i as f64 + 0.7),
            escape(&e.classes[i].id)
        ));
    }
    body.push_str(&format!(
        r#"<text x="{PAD}" y="{:.1}" font-size="11">rows: true class; columns: predicted (last: unknown)</text>"#,
        PAD - 10.0
    ));
    Some(frame(
        "Confusion matrix, one query per decision",
        &body,
        height,
    ))
}

/// Identification posterior as horizontal bars.
pub fn posterior_bars(id: &Identification) -> Option<Chart> {
    let top: Vec<_> = id.posterior.iter().take(6).collect();
    if top.is_empty() {
        return None;
    }
    let height = PAD + 40.0 + 22.0 * top.len() as f64;
    let mut body = String::new();
    for (i, p) in top.iter().enumerate() {
        let y = 20.0 + 22.0 * i as f64;
        let w = (W - 300.0) * p.probability;
        body.push_str(&format!(
            r#"<text x="8" y="{:.1}" font-size="11">{}</text><rect x="280" y="{:.1}" width="{w:.1}" height="14" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="11">{:.3}</text>"#,
            y + 11.0,
            escape(&format!("{} {}", p.class, p.name)),
            y,
            COLORS[i % COLORS.len()],
            (285.0 + w).min(W - 48.0),
            y + 11.0,
            p.probability
        ));
    }
    let axis_y = height - PAD + 10.0;
    for v in [0.0, 0.5, 1.0] {
        let x = 280.0 + (W - 300.0) * v;
        body.push_str(&format!(
            r##"<line x1="{x:.1}" y1="{axis_y}" x2="{x:.1}" y2="{t}" stroke="#333"/><text x="{x:.1}" y="{ty}" font-size="10" text-anchor="middle">{v}</text>"##,
            t = axis_y + 4.0,
            ty = axis_y + 15.0
        ));
    }
    body.push_str(&format!(
        r##"<line x1="280" y1="{axis_y}" x2="{r}" y2="{axis_y}" stroke="#333"/><text x="{cx}" y="{ly}" font-size="12" text-anchor="middle">posterior probability</text>"##,
        r = W - 20.0,
        cx = 280.0 + (W - 300.0) / 2.0,
        ly = axis_y + 28.0
    ));
    Some(frame(
        &format!("Posterior over platforms for {}", id.target),
        &body,
        height,
    ))
}

/// The colour of a dimension's status in the watch charts and tables.
pub fn status_color(s: DimensionStatus) -> &'static str {
    match s {
        DimensionStatus::Consistent => "#2ca02c",
        DimensionStatus::Mismatch => "#d62728",
        DimensionStatus::Unknown => "#ff7f0e",
        DimensionStatus::Inconclusive => "#bbbbbb",
    }
}

/// A watched provider's rounds: one lane per claimed dimension, one cell per round coloured by
/// its status, a dashed line where a change began.
pub fn watch_chart(p: &ProviderRow, rounds: u32) -> Option<Chart> {
    let dims: Vec<Dimension> = p.dimensions.iter().map(|d| d.dimension).collect();
    if dims.is_empty() || rounds == 0 {
        return None;
    }
    let (left, top, lane) = (96.0, 34.0, 24.0);
    let right = W - 20.0;
    let bottom = top + lane * dims.len() as f64;
    let height = bottom + 46.0;
    let cell = (right - left) / f64::from(rounds);
    let x = |round: u32| left + cell * f64::from(round - 1);
    let mut body = String::new();
    for (k, s) in [
        DimensionStatus::Consistent,
        DimensionStatus::Mismatch,
        DimensionStatus::Unknown,
        DimensionStatus::Inconclusive,
    ]
    .iter()
    .enumerate()
    {
        let lx = left + 110.0 * k as f64;
        body.push_str(&format!(
            r#"<rect x="{lx}" y="8" width="10" height="10" fill="{}"/><text x="{tx}" y="17" font-size="11">{}</text>"#,
            status_color(*s),
            s.name(),
            tx = lx + 14.0
        ));
    }
    for (i, d) in dims.iter().enumerate() {
        let y = top + lane * i as f64;
        body.push_str(&format!(
            r#"<text x="{tx}" y="{ty:.1}" font-size="11" text-anchor="end">{d}</text>"#,
            tx = left - 6.0,
            ty = y + lane * 0.65
        ));
        for point in &p.series {
            let status = crate::comparison::status_on(point, *d);
            body.push_str(&format!(
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}" stroke="#fff"><title>round {}: {}</title></rect>"##,
                x(point.round),
                y + 2.0,
                cell,
                lane - 4.0,
                status_color(status),
                point.round,
                status.name()
            ));
        }
    }
    for c in p.changes() {
        let cx = x(c.since_round);
        body.push_str(&format!(
            r##"<line x1="{cx:.1}" y1="{t}" x2="{cx:.1}" y2="{bottom}" stroke="#000" stroke-width="2" stroke-dasharray="4 3"/><text x="{tx:.1}" y="{ty}" font-size="10">{} → {}</text>"##,
            c.dimension,
            escape(&c.to),
            t = top - 4.0,
            tx = cx + 3.0,
            ty = top - 6.0
        ));
    }
    // Axes: rounds along the bottom (every fifth labelled), dimensions up the side.
    body.push_str(&format!(
        r##"<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#333"/><text x="{cx}" y="{ly}" font-size="12" text-anchor="middle">round</text><text x="12" y="{cy}" font-size="12" text-anchor="middle" transform="rotate(-90 12 {cy})">claimed dimension</text>"##,
        cx = (left + right) / 2.0,
        ly = bottom + 38.0,
        cy = (top + bottom) / 2.0
    ));
    for r in (1..=rounds).filter(|r| *r == 1 || r % 5 == 0 || *r == rounds) {
        let tx = x(r) + cell / 2.0;
        body.push_str(&format!(
            r##"<line x1="{tx:.1}" y1="{bottom}" x2="{tx:.1}" y2="{b4}" stroke="#333"/><text x="{tx:.1}" y="{ty}" font-size="10" text-anchor="middle">{r}</text>"##,
            b4 = bottom + 4.0,
            ty = bottom + 16.0
        ));
    }
    Some(frame(
        &format!(
            "{}: each round's verdict per claimed dimension ({})",
            p.provider, p.claim
        ),
        &body,
        height,
    ))
}
