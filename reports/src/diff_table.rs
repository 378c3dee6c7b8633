//! `hspi dataset diff` as text.

use hspi_datasets::diff::DatasetDiff;

/// Per platform pair, how many probes are bit-identical, and the platforms one side lacks.
pub fn render_text(d: &DatasetDiff) -> String {
    let mut out = String::new();
    for p in &d.pairs {
        let platform = if p.left == p.right {
            p.left.clone()
        } else {
            format!("{} ~ {}", p.left, p.right)
        };
        let verdict = match &p.first_difference {
            None if p.common_probes > 0 => "identical".to_string(),
            None => "no common probes".to_string(),
            Some(id) => format!("first difference at probe {id}"),
        };
        out.push_str(&format!(
            "{platform}: {}/{} probes bit-identical ({verdict})\n",
            p.identical, p.common_probes
        ));
    }
    for (side, list) in [("left", &d.only_left), ("right", &d.only_right)] {
        for platform in list {
            out.push_str(&format!("{platform}: only in the {side} dataset\n"));
        }
    }
    out
}
