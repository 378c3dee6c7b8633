//! Inline SVG charts (no scripts, no external assets): posterior against queries, per-query
//! evidence, confusion heatmap, accuracy against queries, posterior bars.

use hspi_classify::evaluate::EvalReport;
use hspi_classify::verify::VerifyReport;
use hspi_classify::Identification;

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

fn frame(title: &str, body: &str, height: f64) -> String {
    format!(
        r##"<figure><svg viewBox="0 0 {W} {height}" width="{W}" height="{height}" role="img" aria-label="{t}"><rect x="0" y="0" width="{W}" height="{height}" fill="#fff"/>{body}</svg><figcaption>{t}</figcaption></figure>"##,
        t = escape(title)
    )
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
pub fn posterior_chart(v: &VerifyReport) -> String {
    let n = v.evidence.len();
    let Some(last) = v.evidence.last() else {
        return String::new();
    };
    let mut order: Vec<usize> = (0..last.posterior.len()).collect();
    order.sort_by(|a, b| last.posterior[*b].total_cmp(&last.posterior[*a]));
    let mut body = axes("queries spent", "probability");
    body.push_str(&unit_ticks());
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
    frame("Posterior over platforms against queries spent", &body, H)
}

/// Each query's log-likelihood ratio (bars) and the running total against the thresholds.
pub fn evidence_chart(v: &VerifyReport) -> String {
    let n = v.evidence.len();
    if n == 0 {
        return String::new();
    }
    let (hi_t, lo_t) = v.thresholds;
    let hi = v
        .evidence
        .iter()
        .map(|e| e.cumulative_llr.max(e.llr))
        .fold(hi_t, f64::max)
        + 0.5;
    let lo = v
        .evidence
        .iter()
        .map(|e| e.cumulative_llr.min(e.llr))
        .fold(lo_t, f64::min)
        - 0.5;
    let mut body = axes("query", "log-likelihood ratio (alternative vs claim)");
    let zero = sy(0.0, lo, hi);
    let band = (W - 2.0 * PAD) / n as f64;
    let bx = |i: usize| PAD + band * (i as f64 + 0.5);
    let bw = band * 0.6;
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
    let pts: Vec<String> = v
        .evidence
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{:.1},{:.1}", bx(i), sy(e.cumulative_llr, lo, hi)))
        .collect();
    body.push_str(&format!(
        r##"<polyline fill="none" stroke="#000" stroke-width="2" points="{}"/>"##,
        pts.join(" ")
    ));
    for (t, label) in [(hi_t, "mismatch"), (lo_t, "consistent")] {
        let y = sy(t, lo, hi);
        body.push_str(&format!(
            r##"<line x1="{PAD}" y1="{y:.1}" x2="{r}" y2="{y:.1}" stroke="#555" stroke-dasharray="4 3"/><text x="{tx}" y="{ty:.1}" font-size="11" text-anchor="end">{label}</text>"##,
            r = W - PAD,
            tx = W - PAD,
            ty = y - 3.0
        ));
    }
    frame("Per-query evidence and running total", &body, H)
}

/// Accuracy against queries per decision: hspi, the HSPI baseline and random guessing.
pub fn accuracy_chart(e: &EvalReport) -> String {
    let pts = &e.hspi.by_queries.points;
    let n = pts.len();
    if n == 0 {
        return String::new();
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
    frame("Accuracy against queries per decision", &body, H)
}

/// Confusion matrix (one query) as a heatmap; the last column is "unknown".
pub fn confusion_heatmap(e: &EvalReport) -> String {
    let k = e.classes.len();
    if k == 0 {
        return String::new();
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
    frame("Confusion matrix, one query per decision", &body, height)
}

/// Identification posterior as horizontal bars.
pub fn posterior_bars(id: &Identification) -> String {
    let top: Vec<_> = id.posterior.iter().take(6).collect();
    if top.is_empty() {
        return String::new();
    }
    let height = PAD + 22.0 * top.len() as f64;
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
            285.0 + w,
            y + 11.0,
            p.probability
        ));
    }
    frame(
        &format!("Posterior over platforms for {}", id.target),
        &body,
        height,
    )
}
