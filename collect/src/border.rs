//! Border inputs (HSPI-BI) for image models: for a pair of platforms, an 8-bit input on which their
//! top labels differ. Phase 1 walks to the decision boundary by signed-gradient steps on candle's
//! autograd (the f32 network as the surrogate: quantisers pass gradients straight through);
//! phase 2 searches 8-bit neighbours on the two real platforms, keeping moves that bring the top-2
//! margin nearer zero, until the platforms disagree or the evaluation budget is spent.

use candle_core::{DType, Device, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::backend::{forward_layers, CandleLayer, ImageBackend};
use crate::error::Result;
use crate::zoo::ImageModel;

/// Evaluations without progress before the search kicks itself out of a local minimum.
const STALL_LIMIT: usize = 300;

#[derive(Debug, Clone, Copy)]
pub struct BorderConfig {
    pub gradient_steps: usize,
    /// Forward passes of the two platforms allowed in the local search.
    pub search_evals: usize,
    pub seed: u64,
}

impl Default for BorderConfig {
    fn default() -> Self {
        BorderConfig {
            gradient_steps: 200,
            search_evals: 30000,
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

fn argmax(v: &[f32]) -> usize {
    (0..v.len())
        .max_by(|a, b| v[*a].total_cmp(&v[*b]).then(b.cmp(a)))
        .unwrap_or(0)
}

fn margin(v: &[f32]) -> f32 {
    let top = argmax(v);
    let second = (0..v.len())
        .filter(|i| *i != top)
        .map(|i| v[i])
        .fold(f32::NEG_INFINITY, f32::max);
    v[top] - second
}

fn quantize8(v: f32) -> f32 {
    (v.clamp(0.0, 1.0) * 255.0).round() / 255.0
}

/// The surrogate: the model's f32 graph, differentiable in its input.
pub struct Surrogate {
    layers: Vec<CandleLayer>,
    shape: [usize; 3],
}

impl Surrogate {
    pub fn new(model: &ImageModel) -> Result<Surrogate> {
        Ok(Surrogate {
            layers: model
                .layers
                .iter()
                .map(|l| CandleLayer::from_layer(l, DType::F32, &Device::Cpu))
                .collect::<candle_core::Result<_>>()?,
            shape: model.input_shape,
        })
    }

    /// Signed-gradient descent on the top-2 margin until it changes sign (the boundary).
    fn to_boundary(&self, start: &[f32], steps: usize) -> Result<Vec<f32>> {
        let [c, h, w] = self.shape;
        let mut x = start.to_vec();
        for _ in 0..steps {
            let var = Var::from_tensor(&Tensor::from_slice(&x, (1, c, h, w), &Device::Cpu)?)?;
            let z = forward_layers(&self.layers, var.as_tensor())?.squeeze(0)?;
            let zv: Vec<f32> = z.to_vec1()?;
            let top = argmax(&zv);
            let second = (0..zv.len())
                .filter(|i| *i != top)
                .max_by(|a, b| zv[*a].total_cmp(&zv[*b]))
                .unwrap_or(0);
            let m = (z.get(top)? - z.get(second)?)?;
            if m.to_scalar::<f32>()? < 2.0 / 255.0 {
                break;
            }
            let grads = m.backward()?;
            let g: Vec<f32> = grads
                .get(var.as_tensor())
                .expect("input gradient")
                .flatten_all()?
                .to_vec1()?;
            for (xi, gi) in x.iter_mut().zip(g) {
                *xi = quantize8(*xi - gi.signum() / 255.0);
            }
        }
        Ok(x)
    }
}

/// Find an input on which `a` and `b` give different top labels, starting from `start`.
pub fn find_border(
    surrogate: &Surrogate,
    a: &dyn ImageBackend,
    b: &dyn ImageBackend,
    start: &[f32],
    config: &BorderConfig,
) -> Result<Option<Border>> {
    let mut rng = ChaCha20Rng::seed_from_u64(config.seed);
    let mut x = surrogate.to_boundary(start, config.gradient_steps)?;
    let eval = |x: &[f32]| -> Result<(Vec<f32>, Vec<f32>)> {
        let mut za = a.forward(&[x])?;
        let mut zb = b.forward(&[x])?;
        Ok((za.remove(0), zb.remove(0)))
    };
    let (za, zb) = eval(&x)?;
    if argmax(&za) != argmax(&zb) {
        return Ok(Some(Border {
            label_a: argmax(&za),
            label_b: argmax(&zb),
            input: x,
            evals: 1,
        }));
    }
    let mut best = margin(&za).min(margin(&zb));
    let mut stalled = 0;
    for evals in 2..=config.search_evals {
        let mut y = x.clone();
        // Stuck in a local minimum of the margin: kick a handful of pixels and go on from there.
        let kick = stalled >= STALL_LIMIT;
        let moves = if kick {
            rng.random_range(4..=8)
        } else {
            rng.random_range(1..=2)
        };
        for _ in 0..moves {
            let i = rng.random_range(0..y.len());
            let step = if rng.random::<bool>() { 1.0 } else { -1.0 } / 255.0;
            y[i] = quantize8(y[i] + step);
        }
        let (za, zb) = eval(&y)?;
        let (la, lb) = (argmax(&za), argmax(&zb));
        if la != lb {
            return Ok(Some(Border {
                input: y,
                label_a: la,
                label_b: lb,
                evals,
            }));
        }
        let m = margin(&za).min(margin(&zb));
        if m < best || kick {
            best = m;
            x = y;
            stalled = 0;
        } else {
            stalled += 1;
        }
    }
    Ok(None)
}
