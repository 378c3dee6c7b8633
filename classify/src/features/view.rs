//! One numeric view of every output kind, so extractors need not match on `Outputs` themselves.

use hspi_datasets::{Outputs, Presentation};

/// Which token a step or an alternative names: its id where the endpoint gave one, and its text.
/// Most providers (vLLM, OpenAI) give token strings and bytes only, llama-server adds ids: two
/// keys name the same token by id where both have one, else by text ([`TokenKey::same`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenKey {
    pub id: Option<u32>,
    pub text: String,
}

impl TokenKey {
    pub fn new(id: Option<u32>, text: &str) -> TokenKey {
        TokenKey {
            id,
            text: text.to_string(),
        }
    }

    /// A key known by its text alone.
    pub fn text(text: &str) -> TokenKey {
        TokenKey::new(None, text)
    }

    /// Whether both name the same token: by id where both have one, else by text. An empty text
    /// or one holding U+FFFD (a partial UTF-8 token printed lossily: many tokens print so)
    /// names no token by itself.
    pub fn same(&self, other: &TokenKey) -> bool {
        match (self.id, other.id) {
            (Some(a), Some(b)) => a == b,
            _ => self.text_names_one() && self.text == other.text,
        }
    }

    fn text_names_one(&self) -> bool {
        !self.text.is_empty() && !self.text.contains('\u{FFFD}')
    }
}

impl std::fmt::Display for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.id {
            Some(id) => write!(f, "#{id} {:?}", self.text),
            None => write!(f, "{:?}", self.text),
        }
    }
}

/// One generated token: its key, the sampled token's logprob and the top alternatives as
/// (key, value).
#[derive(Debug, Clone, PartialEq)]
pub struct StepView {
    pub key: TokenKey,
    pub value: Option<f32>,
    pub top: Vec<(TokenKey, f32)>,
}

impl StepView {
    /// The value of the alternative naming `key`, when exactly one does (two alternatives with
    /// one text and no ids cannot be told apart).
    pub fn entry(&self, key: &TokenKey) -> Option<f32> {
        let mut found = self.top.iter().filter(|(k, _)| k.same(key));
        match (found.next(), found.next()) {
            (Some((_, v)), None) => Some(*v),
            _ => None,
        }
    }

    /// Whether both list the same alternatives in the same order.
    pub fn same_order(&self, other: &StepView) -> bool {
        self.top.len() == other.top.len()
            && self.top.iter().zip(&other.top).all(|(a, b)| a.0.same(&b.0))
    }
}

/// How many leading steps of two generations sampled the same tokens.
pub fn shared_prefix(a: &[StepView], b: &[StepView]) -> usize {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| x.key.same(&y.key))
        .count()
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
                        key: TokenKey::new(Some(*id), ""),
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
                        key: TokenKey::new(s.id, &s.token),
                        value: s.logprob.as_ref().map(|l| l.value()),
                        top: s
                            .top
                            .iter()
                            .map(|t| (TokenKey::new(t.id, &t.token), t.logprob.value()))
                            .collect(),
                    })
                    .collect(),
            },
        }
    }

    /// Whether two answers are the same as shown: the same logits bit for bit, or the same
    /// text and tokens ([`TokenKey::same`]) with bit-identical values, whether or not both
    /// sides name their tokens by id.
    pub fn same(&self, other: &View) -> bool {
        let bits = |a: Option<f32>, b: Option<f32>| a.map(f32::to_bits) == b.map(f32::to_bits);
        match (self, other) {
            (View::Logits(a), View::Logits(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (View::Steps { text: ta, steps: a }, View::Steps { text: tb, steps: b }) => {
                ta == tb
                    && a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| {
                        x.key.same(&y.key)
                            && bits(x.value, y.value)
                            && x.same_order(y)
                            && x.top
                                .iter()
                                .zip(&y.top)
                                .all(|(p, q)| bits(Some(p.1), Some(q.1)))
                    })
            }
            _ => false,
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

pub use hspi_datasets::ulp_diff;

/// log2(1 + |ulps|): keeps one-ulp and million-ulp differences on one readable scale.
pub fn log_ulps(d: i64) -> f64 {
    (1.0 + d.unsigned_abs() as f64).log2()
}
