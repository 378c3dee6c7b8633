//! One deployment behind a mixture (`verify::routing`): its format and its share of the answers
//! that each settled one, with the share's interval; and a mixture in words.

use serde::{Deserialize, Serialize};

/// One deployment behind a mixture: its format, and its share of the answers that settled one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutedShare {
    /// The format (`f32/f16` for the base and the formats within a change of engine's reach,
    /// which no direction tells apart).
    pub format: String,
    /// Whether the claim allows it.
    pub on_claim: bool,
    /// Answers settled as it.
    pub answers: usize,
    /// Its share of the settled answers, and the 95 % interval of the share.
    pub share: f64,
    pub low: f64,
    pub high: f64,
}

impl RoutedShare {
    /// `q4_0 7 of 24 (29 %, 95 % interval 13–51 %)`.
    pub fn describe(&self, settled: usize) -> String {
        format!(
            "{} {} of {settled} ({:.0} %, 95 % interval {:.0}–{:.0} %)",
            self.format,
            self.answers,
            100.0 * self.share,
            100.0 * self.low,
            100.0 * self.high
        )
    }
}

/// A mixture in words: `f16 17 of 24 (71 %, 95 % interval 49–87 %); q4_0 7 of 24 (…)`.
pub fn describe_routes(routes: &[RoutedShare], settled: usize, unsettled: usize) -> String {
    let parts: Vec<String> = routes.iter().map(|r| r.describe(settled)).collect();
    let rest = match unsettled {
        0 => String::new(),
        1 => "; 1 more answer settled no one format".into(),
        n => format!("; {n} more answers settled no one format"),
    };
    format!("{}{rest}", parts.join("; "))
}
