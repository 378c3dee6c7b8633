//! One numeric view of every output kind, so extractors need not match on `Outputs` themselves.

use hspi_datasets::{Outputs, Presentation};

/// One generated token: its key (id when the endpoint gives one, else the text), the sampled
/// token's logprob and the top alternatives as (key, value).
#[derive(Debug, Clone, PartialEq)]
pub struct StepView {
    pub key: String,
    pub value: Option<f32>,
    pub top: Vec<(String, f32)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum View {
    /// White-box: the full output vector.
    Logits(Vec<f32>),
    /// Black-box: generated tokens with whatever logprobs came back (none for text-only answers).
    Steps { text: String, steps: Vec<StepView> },
}

impl View {
    pub fn of(outputs: &Outputs) -> View {
        match outputs {
            Outputs::Logits { values } => View::Logits(values.to_f32()),
            Outputs::Tokens { ids } => View::Steps {
                text: String::new(),
                steps: ids
                    .iter()
                    .map(|id| StepView {
                        key: format!("#{id}"),
                        value: None,
                        top: Vec::new(),
                    })
                    .collect(),
            },
            Outputs::Completion { text, steps, .. } => View::Steps {
                text: text.clone(),
                steps: steps
                    .iter()
                    .map(|s| StepView {
                        key: token_key(s.id, &s.token),
                        value: s.logprob.as_ref().map(|l| l.value()),
                        top: s
                            .top
                            .iter()
                            .map(|t| (token_key(t.id, &t.token), t.logprob.value()))
                            .collect(),
                    })
                    .collect(),
            },
        }
    }

    /// This answer as an endpoint with `presentation` would show it: logprobs rounded to its
    /// grid, or the text alone.
    pub fn shown(&self, presentation: Presentation) -> View {
        match (self, presentation) {
            (View::Steps { text, .. }, Presentation::TextOnly) => View::Steps {
                text: text.clone(),
                steps: Vec::new(),
            },
            (View::Steps { text, steps }, Presentation::Rounded(g)) => View::Steps {
                text: text.clone(),
                steps: steps
                    .iter()
                    .map(|s| StepView {
                        key: s.key.clone(),
                        value: s.value.map(|v| g.round(v)),
                        top: s
                            .top
                            .iter()
                            .map(|(k, v)| (k.clone(), g.round(*v)))
                            .collect(),
                    })
                    .collect(),
            },
            _ => self.clone(),
        }
    }

    /// The values white-box bit features read: the logits, or the top-k logprobs step by step.
    /// `width` values per step (logits: the first `width`), missing ones as `None`.
    pub fn value_grid(&self, steps: usize, width: usize) -> Vec<Option<f32>> {
        match self {
            View::Logits(v) => (0..width).map(|i| v.get(i).copied()).collect(),
            View::Steps { steps: s, .. } => (0..steps)
                .flat_map(|i| {
                    (0..width).map(move |j| s.get(i).and_then(|st| st.top.get(j)).map(|t| t.1))
                })
                .collect(),
        }
    }
}

fn token_key(id: Option<u32>, token: &str) -> String {
    id.map_or_else(|| token.to_string(), |i| format!("#{i}"))
}

pub use hspi_datasets::ulp_diff;

/// log2(1 + |ulps|): keeps one-ulp and million-ulp differences on one readable scale.
pub fn log_ulps(d: i64) -> f64 {
    (1.0 + d.unsigned_abs() as f64).log2()
}
