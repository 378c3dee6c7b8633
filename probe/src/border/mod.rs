//! Border inputs (HSPI-BI) for image models: for a pair of platforms, an 8-bit input on which their
//! top labels differ. Phase 1 climbs the HSPI-BI loss by signed-gradient steps on candle's autograd
//! through each platform's surrogate (its quantised weights, rounding passed straight through) to
//! the decision boundary; phase 2 works on the two real platforms, stepping pixels one level at a
//! time towards an exact tie, until they disagree or the evaluation budget is spent.

mod classes;
mod surrogate;

pub use classes::{border_inputs, BorderInputs};
pub use surrogate::Surrogate;

use candle_core::Tensor;
use hspi_datasets::top_label;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use hspi_collect::backend::ImageRunner;
use hspi_collect::Result;

#[derive(Debug, Clone, Copy)]
pub struct BorderConfig {
    pub gradient_steps: usize,
    /// Forward passes allowed in the local search, each platform's counted.
    pub search_evals: usize,
    pub seed: u64,
}

impl Default for BorderConfig {
    fn default() -> Self {
        BorderConfig {
            gradient_steps: 200,
            search_evals: 60000,
            seed: 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Border {
    pub input: Vec<f32>,
    pub label_a: usize,
    pub label_b: usize,
    pub evals: usize,
}

fn quantize8(v: f32) -> f32 {
    (v.clamp(0.0, 1.0) * 255.0).round() / 255.0
}

/// Signed-gradient ascent (HSPI-BI) on CE(z_a, argmax z_b) + CE(z_b, argmax z_a) through the two
/// platforms' surrogates, on 8-bit inputs, until the surrogates' top-2 margin is under two pixel
/// levels: near the decision boundary, where the real platforms' rounding can tip the label.
fn to_boundary(sa: &Surrogate, sb: &Surrogate, start: &[f32], steps: usize) -> Result<Vec<f32>> {
    let mut x = start.to_vec();
    for _ in 0..steps {
        let var = sa.input(&x)?;
        let za = sa.logits(var.as_tensor())?;
        let zb = sb.logits(var.as_tensor())?;
        let (va, vb): (Vec<f32>, Vec<f32>) = (za.to_vec1()?, zb.to_vec1()?);
        let (top, second) = top2(&va);
        if va[top] - va[second] < 2.0 / 255.0 {
            break;
        }
        let loss = (cross_entropy(&za, top_label(&vb).unwrap_or(0))?
            + cross_entropy(&zb, top_label(&va).unwrap_or(0))?)?;
        let grads = loss.backward()?;
        let g: Vec<f32> = grads
            .get(var.as_tensor())
            .expect("input gradient")
            .flatten_all()?
            .to_vec1()?;
        for (xi, gi) in x.iter_mut().zip(g) {
            *xi = quantize8(*xi + gi.signum() / 255.0);
        }
    }
    Ok(x)
}

/// −log softmax(z)[label], stable: the maximum is subtracted before exponentiating.
fn cross_entropy(z: &Tensor, label: usize) -> candle_core::Result<Tensor> {
    let max = z.max(0)?.detach();
    let lse = (z.broadcast_sub(&max)?.exp()?.sum(0)?.log()? + &max)?;
    lse - z.get(label)?
}

/// Find an input on which `a` and `b` give different top labels, starting from `start`.
///
/// The network is piecewise linear in its input (convolutions, ReLU, max-pool, linear layers), so
/// near a point the effect of a handful of one-level pixel steps adds up exactly, to within
/// rounding. Each round measures every single step on `a`, predicts the top-2 gap of every
/// combination of up to three steps, and runs the combinations predicted nearest a tie on both
/// platforms: their gaps land within a few ulps of zero, where two platforms that round
/// differently disagree on the top label. Platforms a few ulps apart need exactly that; a random
/// walk on the margin does not get there (12 of 300 CNN-grid pairs were missed that way).
pub fn find_border(
    a: (&dyn ImageRunner, &Surrogate),
    b: (&dyn ImageRunner, &Surrogate),
    start: &[f32],
    config: &BorderConfig,
) -> Result<Option<Border>> {
    let mut rng = ChaCha20Rng::seed_from_u64(config.seed);
    let mut x = to_boundary(a.1, b.1, start, config.gradient_steps)?;
    let (a, b) = (a.0, b.0);
    let mut search = Search {
        a,
        b,
        evals: 0,
        budget: config.search_evals,
    };
    let (za, found) = search.both(&[x.clone()])?;
    if let Some(border) = found {
        return Ok(Some(border));
    }
    let mut za = za.into_iter().next().expect("one input, one output");
    let mut stalled = 0;
    while search.evals < search.budget {
        let (top, second) = top2(&za);
        let gap = |z: &[f32]| z[top] - z[second];
        let steps = single_steps(&x);
        let stepped: Vec<Vec<f32>> = steps.iter().map(|s| apply(&x, &[*s])).collect();
        let Some(zs) = search.only_a(&stepped)? else {
            break;
        };
        let deltas: Vec<f32> = zs.iter().map(|z| gap(z) - gap(&za)).collect();
        let combos = nearest_ties(gap(&za), &deltas, &steps, COMBOS_PER_ROUND);
        let candidates: Vec<Vec<f32>> = combos.iter().map(|c| apply(&x, c)).collect();
        let (zc, found) = search.both(&candidates)?;
        if let Some(border) = found {
            return Ok(Some(border));
        }
        // Go on from the candidate nearest a tie on `a`; when no candidate improves on where we
        // stand (the prediction left the linear region), kick a few pixels and start afresh.
        let best = (0..zc.len())
            .filter(|i| top2(&zc[*i]) == (top, second) || top2(&zc[*i]) == (second, top))
            .min_by(|i, j| gap(&zc[*i]).abs().total_cmp(&gap(&zc[*j]).abs()));
        match best {
            Some(i) if gap(&zc[i]).abs() < gap(&za).abs() => {
                x = candidates[i].clone();
                za = zc[i].clone();
                stalled = 0;
            }
            _ => {
                stalled += 1;
                let kicks = if stalled > 2 {
                    rng.random_range(4..=8)
                } else {
                    1
                };
                let mut y = x.clone();
                for _ in 0..kicks {
                    let i = rng.random_range(0..y.len());
                    let step = if rng.random::<bool>() { 1.0 } else { -1.0 } / 255.0;
                    y[i] = quantize8(y[i] + step);
                }
                let (mut zy, found) = search.both(&[y.clone()])?;
                if let Some(border) = found {
                    return Ok(Some(border));
                }
                x = y;
                za = zy.remove(0);
            }
        }
    }
    Ok(None)
}

/// Combinations of single steps evaluated on both platforms per round.
const COMBOS_PER_ROUND: usize = 24;

/// A one-level change of one pixel: (pixel index, +1 or -1).
type Step = (usize, i8);

fn single_steps(x: &[f32]) -> Vec<Step> {
    let mut steps = Vec::with_capacity(2 * x.len());
    for (i, v) in x.iter().enumerate() {
        let level = (v * 255.0).round();
        if level < 255.0 {
            steps.push((i, 1));
        }
        if level > 0.0 {
            steps.push((i, -1));
        }
    }
    steps
}

fn apply(x: &[f32], steps: &[Step]) -> Vec<f32> {
    let mut y = x.to_vec();
    for (i, d) in steps {
        y[*i] = quantize8(y[*i] + f32::from(*d) / 255.0);
    }
    y
}

/// The `keep` combinations of up to three steps on distinct pixels whose predicted gap
/// (`gap + sum of their deltas`) is nearest zero.
fn nearest_ties(gap: f32, deltas: &[f32], steps: &[Step], keep: usize) -> Vec<Vec<Step>> {
    let n = deltas.len();
    let g = f64::from(gap);
    let d: Vec<f64> = deltas.iter().map(|v| f64::from(*v)).collect();
    let mut nearest = Nearest::new(keep);
    for i in 0..n {
        nearest.offer((g + d[i]).abs(), [i, 0, 0], 1);
        for j in i + 1..n {
            if steps[i].0 == steps[j].0 {
                continue;
            }
            let gij = g + d[i] + d[j];
            nearest.offer(gij.abs(), [i, j, 0], 2);
            for k in j + 1..n {
                if steps[k].0 != steps[i].0 && steps[k].0 != steps[j].0 {
                    nearest.offer((gij + d[k]).abs(), [i, j, k], 3);
                }
            }
        }
    }
    nearest
        .into_sorted()
        .into_iter()
        .map(|(_, idx, len)| idx[..len].iter().map(|i| steps[*i]).collect())
        .collect()
}

/// The `keep` smallest of a stream of scored combinations, without storing the stream (a round
/// offers some 350 000).
struct Nearest {
    keep: usize,
    kept: Vec<(f64, [usize; 3], usize)>,
    threshold: f64,
}

impl Nearest {
    fn new(keep: usize) -> Nearest {
        Nearest {
            keep,
            kept: Vec::with_capacity(4 * keep),
            threshold: f64::INFINITY,
        }
    }

    fn offer(&mut self, score: f64, idx: [usize; 3], len: usize) {
        if self.keep == 0 || score >= self.threshold {
            return;
        }
        self.kept.push((score, idx, len));
        if self.kept.len() == 4 * self.keep {
            self.shrink();
        }
    }

    fn shrink(&mut self) {
        let keep = self.keep.min(self.kept.len());
        if keep == 0 {
            return;
        }
        self.kept
            .select_nth_unstable_by(keep - 1, |p, q| p.0.total_cmp(&q.0));
        self.kept.truncate(keep);
        if self.kept.len() == self.keep {
            self.threshold = self.kept[keep - 1].0;
        }
    }

    fn into_sorted(mut self) -> Vec<(f64, [usize; 3], usize)> {
        self.shrink();
        self.kept.sort_by(|p, q| p.0.total_cmp(&q.0));
        self.kept
    }
}

fn top2(z: &[f32]) -> (usize, usize) {
    let top = top_label(z).unwrap_or(0);
    let second = (0..z.len())
        .filter(|i| *i != top)
        .max_by(|p, q| z[*p].total_cmp(&z[*q]).then(q.cmp(p)))
        .unwrap_or(0);
    (top, second)
}

/// The two platforms and the forward passes spent on them.
struct Search<'a> {
    a: &'a dyn ImageRunner,
    b: &'a dyn ImageRunner,
    evals: usize,
    budget: usize,
}

impl Search<'_> {
    /// `a`'s logits for each input, or None when the budget cannot pay for them.
    fn only_a(&mut self, inputs: &[Vec<f32>]) -> Result<Option<Vec<Vec<f32>>>> {
        if self.evals + inputs.len() > self.budget {
            return Ok(None);
        }
        self.evals += inputs.len();
        let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
        Ok(Some(self.a.forward(&refs)?))
    }

    /// Both platforms on each input: `a`'s logits, and the first input they disagree on.
    ///
    /// Candidates run in batches, but the platforms are defined at batch size 1 and a batched
    /// GEMM may round differently, so a disagreement counts only once it holds for the input alone.
    fn both(&mut self, inputs: &[Vec<f32>]) -> Result<(Vec<Vec<f32>>, Option<Border>)> {
        let refs: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
        let za = self.a.forward(&refs)?;
        let zb = self.b.forward(&refs)?;
        self.evals += 2 * inputs.len();
        for ((za, zb), x) in za.iter().zip(&zb).zip(inputs) {
            if top_label(za).unwrap_or(0) == top_label(zb).unwrap_or(0) {
                continue;
            }
            let (la, lb) = self.alone(x)?;
            if la != lb {
                return Ok((
                    Vec::new(),
                    Some(Border {
                        input: x.clone(),
                        label_a: la,
                        label_b: lb,
                        evals: self.evals,
                    }),
                ));
            }
        }
        Ok((za, None))
    }

    /// Top labels of `a` and `b` for one input run by itself.
    fn alone(&mut self, x: &[f32]) -> Result<(usize, usize)> {
        self.evals += 2;
        let la = top_label(&self.a.forward(&[x])?[0]).unwrap_or(0);
        let lb = top_label(&self.b.forward(&[x])?[0]).unwrap_or(0);
        Ok((la, lb))
    }
}
