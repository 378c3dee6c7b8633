//! An answer described against hspi's recomputation of the same probe on each reference
//! platform: identical or not, how far the values are in ULPs, which way they lean, and how long
//! the generations agree. Black-box steps are compared only while both generations share their
//! prefix (after that they answer different questions).

use super::view::{log_ulps, shared_prefix, ulp_diff, StepView};
use super::{Context, Extractor, FeatureSpec, View};

pub struct ReferenceRelative;

const PER_REFERENCE: usize = 9;

impl Extractor for ReferenceRelative {
    fn dim(&self, spec: &FeatureSpec) -> usize {
        PER_REFERENCE * spec.references.len()
    }
    fn extract(&self, ctx: &Context, out: &mut Vec<f64>) {
        for r in ctx.references {
            match r {
                Some(r) => out.extend(compare(ctx.answer, r)),
                None => out.extend([0.0; PER_REFERENCE]),
            }
        }
    }
}

#[derive(Default)]
struct Diffs {
    n: usize,
    exact: usize,
    pos: usize,
    neg: usize,
    sum_log: f64,
    max_log: f64,
}

impl Diffs {
    fn add(&mut self, a: f32, b: f32) {
        let d = ulp_diff(a, b);
        let l = log_ulps(d);
        self.n += 1;
        self.exact += usize::from(d == 0);
        self.pos += usize::from(d > 0);
        self.neg += usize::from(d < 0);
        self.sum_log += l;
        self.max_log = self.max_log.max(l);
    }
    fn summary(&self) -> [f64; 5] {
        let n = self.n.max(1) as f64;
        [
            self.exact as f64 / n,
            self.sum_log / n / 32.0,
            self.max_log / 32.0,
            self.pos as f64 / n,
            self.neg as f64 / n,
        ]
    }
}

fn compare(answer: &View, reference: &View) -> [f64; PER_REFERENCE] {
    let mut diffs = Diffs::default();
    let (identical, agreement, order_same) = match (answer, reference) {
        (View::Logits(a), View::Logits(b)) => {
            for (x, y) in a.iter().zip(b) {
                diffs.add(*x, *y);
            }
            let same_top = hspi_datasets::top_label(a) == hspi_datasets::top_label(b);
            (
                a == b && bits_equal(a, b),
                f64::from(u8::from(same_top)),
                0.0,
            )
        }
        (View::Steps { text: ta, steps: a }, View::Steps { text: tb, steps: b }) => {
            let shared = shared_prefix(a, b);
            // The step where the sampled tokens part still had the same context.
            let compared = (shared + 1).min(a.len()).min(b.len());
            let mut same_order = 0;
            for (x, y) in a.iter().zip(b).take(compared) {
                compare_step(x, y, &mut diffs);
                same_order += usize::from(x.same_order(y));
            }
            let identical = ta == tb && a.len() == b.len() && shared == a.len() && {
                a.iter().zip(b).all(|(x, y)| steps_bit_equal(x, y))
            };
            (
                identical,
                shared as f64 / a.len().max(b.len()).max(1) as f64,
                same_order as f64 / compared.max(1) as f64,
            )
        }
        _ => return [0.0; PER_REFERENCE],
    };
    let s = diffs.summary();
    [
        1.0,
        f64::from(u8::from(identical)),
        agreement,
        s[0],
        s[1],
        s[2],
        s[3],
        s[4],
        order_same,
    ]
}

fn compare_step(x: &StepView, y: &StepView, diffs: &mut Diffs) {
    if let (true, Some(a), Some(b)) = (x.key.same(&y.key), x.value, y.value) {
        diffs.add(a, b);
    }
    for (k, v) in &x.top {
        if let Some(w) = y.entry(k) {
            diffs.add(*v, w);
        }
    }
}

fn steps_bit_equal(x: &StepView, y: &StepView) -> bool {
    x.value.map(f32::to_bits) == y.value.map(f32::to_bits)
        && x.top.len() == y.top.len()
        && x.top
            .iter()
            .zip(&y.top)
            .all(|(a, b)| a.0.same(&b.0) && a.1.to_bits() == b.1.to_bits())
}

fn bits_equal(a: &[f32], b: &[f32]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[cfg(test)]
mod tests {
    use super::super::view::TokenKey;
    use super::*;

    fn step(key: &str, top: &[(&str, f32)]) -> StepView {
        StepView {
            key: TokenKey::text(key),
            value: Some(top[0].1),
            top: top.iter().map(|(k, v)| (TokenKey::text(k), *v)).collect(),
        }
    }

    #[test]
    fn identical_answers_and_one_ulp_apart() {
        let a = View::Logits(vec![1.0, 2.0, 3.0]);
        let f = compare(&a, &a);
        assert_eq!(&f[..4], &[1.0, 1.0, 1.0, 1.0]);
        let b = View::Logits(vec![1.0, f32::from_bits(2.0f32.to_bits() + 1), 3.0]);
        let f = compare(&a, &b);
        assert_eq!(f[1], 0.0, "not identical");
        assert!((f[3] - 2.0 / 3.0).abs() < 1e-12, "two of three exact");
        assert!((f[7] - 1.0 / 3.0).abs() < 1e-12, "one below the reference");
    }

    #[test]
    fn steps_compare_only_the_shared_prefix() {
        let a = View::Steps {
            text: "ab".into(),
            steps: vec![
                step("a", &[("a", -0.5), ("b", -1.0)]),
                step("b", &[("b", -0.1)]),
            ],
        };
        let b = View::Steps {
            text: "ax".into(),
            steps: vec![
                step("a", &[("a", -0.5), ("b", -1.0)]),
                step("x", &[("x", -9.0)]),
            ],
        };
        let f = compare(&a, &b);
        assert_eq!(f[1], 0.0);
        assert_eq!(f[2], 0.5, "one of two sampled tokens shared");
        // Step 2 is compared (same context), but "b" is not in the reference's top list.
        assert_eq!(f[3], 1.0, "every matched value exact");
    }
}
