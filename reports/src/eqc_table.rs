//! The EQC listing as a plain-text table (terminal) and as JSON (machines).

use hspi_classify::EqcGrouping;

pub fn render_text(g: &EqcGrouping) -> String {
    let mut out = format!("{:<5} {:>7}  {}\n", "EQC", "members", "platforms");
    for e in &g.eqcs {
        for (i, m) in e.members.iter().enumerate() {
            if i == 0 {
                out.push_str(&format!("{:<5} {:>7}  {m}\n", e.id, e.members.len()));
            } else {
                out.push_str(&format!("{:<5} {:>7}  {m}\n", "", ""));
            }
        }
    }
    out.push_str(&format!(
        "{} EQCs over {} platforms, {} probes\n",
        g.eqcs.len(),
        g.platforms,
        g.probes
    ));
    out
}

pub fn render_json(g: &EqcGrouping) -> String {
    serde_json::to_string_pretty(g).expect("groupings serialise")
}
