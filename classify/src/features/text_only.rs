//! Generated tokens alone (APIs that return no logprobs): length, and per reference whether the
//! text is identical and how long the generated token prefixes agree.

use super::view::shared_prefix;
use super::{Context, Extractor, FeatureSpec, View};

pub struct TextOnly;

impl Extractor for TextOnly {
    fn dim(&self, spec: &FeatureSpec) -> usize {
        1 + 2 * spec.references.len()
    }
    fn extract(&self, ctx: &Context, out: &mut Vec<f64>) {
        let (text, steps) = match ctx.answer {
            View::Steps { text, steps } => (text.as_str(), steps.as_slice()),
            View::Logits(_) => ("", &[][..]),
        };
        out.push(steps.len() as f64 / ctx.spec.steps.max(1) as f64);
        for r in ctx.references {
            match r {
                Some(View::Steps {
                    text: rt,
                    steps: rs,
                }) => {
                    let same = shared_prefix(steps, rs);
                    out.push(f64::from(u8::from(rt == text)));
                    out.push(same as f64 / steps.len().max(rs.len()).max(1) as f64);
                }
                _ => out.extend([0.0, 0.0]),
            }
        }
    }
}
