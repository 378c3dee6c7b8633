//! A small CNN on scikit-learn's digits. Trained by `hspi zoo train-cnn` (this file's `train`), its
//! weights committed at `collect/zoo/cnn-digits.safetensors` and embedded in the binary, with the
//! training report (test accuracy) beside them in `cnn-digits.json`.

use std::path::Path;

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

use super::candle_layers::{forward_layers, CandleLayer};
use super::digits::Digits;
use super::image_model::{ImageModel, Layer, LayerSpec};
use crate::error::{CollectError, Result};

pub const ID: &str = "cnn-digits";
pub const INPUT_SHAPE: [usize; 3] = [1, 8, 8];

pub const ARCH: [LayerSpec; 10] = [
    LayerSpec::Conv2d {
        name: "conv1",
        in_channels: 1,
        out_channels: 16,
        kernel: 3,
        padding: 1,
    },
    LayerSpec::Relu,
    LayerSpec::MaxPool2,
    LayerSpec::Conv2d {
        name: "conv2",
        in_channels: 16,
        out_channels: 32,
        kernel: 3,
        padding: 1,
    },
    LayerSpec::Relu,
    LayerSpec::MaxPool2,
    LayerSpec::Flatten,
    LayerSpec::Linear {
        name: "fc1",
        in_features: 128,
        out_features: 64,
    },
    LayerSpec::Relu,
    LayerSpec::Linear {
        name: "fc2",
        in_features: 64,
        out_features: 10,
    },
];

const EMBEDDED: &[u8] = include_bytes!("../../zoo/cnn-digits.safetensors");

pub fn embedded() -> ImageModel {
    ImageModel::from_safetensors(
        ID,
        INPUT_SHAPE,
        &ARCH,
        EMBEDDED,
        Path::new("<embedded cnn-digits>"),
    )
    .expect("the embedded cnn-digits weights are valid (checked by tests)")
}

pub fn load_file(path: &Path) -> Result<ImageModel> {
    let bytes = std::fs::read(path).map_err(CollectError::io(path))?;
    ImageModel::from_safetensors(ID, INPUT_SHAPE, &ARCH, &bytes, path)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainConfig {
    pub seed: u64,
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f64,
    /// Share of the digits held out for testing.
    pub test_fraction: f64,
}

impl TrainConfig {
    /// The defaults with this many epochs and this seed (`hspi zoo train-cnn`).
    pub fn new(epochs: usize, seed: u64) -> TrainConfig {
        TrainConfig {
            epochs,
            seed,
            ..TrainConfig::default()
        }
    }
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            seed: 2025,
            epochs: 60,
            batch_size: 64,
            learning_rate: 3e-3,
            test_fraction: 0.2,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainReport {
    pub model: String,
    pub data: String,
    pub data_sha256: String,
    pub train_size: usize,
    pub test_size: usize,
    pub train_accuracy: f64,
    pub test_accuracy: f64,
    pub config: TrainConfig,
}

/// Train from scratch. Initialisation and shuffling come from `config.seed`.
pub fn train(
    digits: &Digits,
    data_sha256: &str,
    config: &TrainConfig,
) -> Result<(ImageModel, TrainReport)> {
    let dev = Device::Cpu;
    let mut rng = ChaCha20Rng::seed_from_u64(config.seed);
    let mut order: Vec<usize> = (0..digits.images.len()).collect();
    order.shuffle(&mut rng);
    let n_test = (order.len() as f64 * config.test_fraction).round() as usize;
    let (test_idx, train_idx) = order.split_at(n_test);

    // He-uniform initial weights from the seeded RNG (candle's own RNG cannot be seeded on CPU).
    let mut vars = Vec::new();
    let mut specs = Vec::new();
    for spec in ARCH {
        let (shape, fan_in): (Vec<usize>, usize) = match spec {
            LayerSpec::Conv2d {
                in_channels,
                out_channels,
                kernel,
                ..
            } => (
                vec![out_channels, in_channels, kernel, kernel],
                in_channels * kernel * kernel,
            ),
            LayerSpec::Linear {
                in_features,
                out_features,
                ..
            } => (vec![out_features, in_features], in_features),
            _ => {
                specs.push((spec, None));
                continue;
            }
        };
        let bound = (6.0 / fan_in as f64).sqrt() as f32;
        let n: usize = shape.iter().product();
        let w: Vec<f32> = (0..n).map(|_| rng.random_range(-bound..bound)).collect();
        let weight = Var::from_tensor(&Tensor::from_vec(w, shape.as_slice(), &dev)?)?;
        let bias = Var::from_tensor(&Tensor::zeros(shape[0], DType::F32, &dev)?)?;
        vars.push(weight.clone());
        vars.push(bias.clone());
        specs.push((spec, Some((weight, bias))));
    }
    let layers = || -> Vec<CandleLayer> {
        specs
            .iter()
            .map(|(spec, wb)| match (spec, wb) {
                (LayerSpec::Conv2d { padding, .. }, Some((w, b))) => CandleLayer::Conv2d {
                    weight: w.as_tensor().clone(),
                    bias: b.as_tensor().clone(),
                    padding: *padding,
                },
                (LayerSpec::Linear { .. }, Some((w, b))) => CandleLayer::Linear {
                    weight: w.as_tensor().clone(),
                    bias: b.as_tensor().clone(),
                },
                (LayerSpec::Relu, _) => CandleLayer::Relu,
                (LayerSpec::MaxPool2, _) => CandleLayer::MaxPool2,
                _ => CandleLayer::Flatten,
            })
            .collect()
    };
    let batch = |idx: &[usize]| -> Result<(Tensor, Tensor)> {
        let x: Vec<f32> = idx
            .iter()
            .flat_map(|i| digits.images[*i].iter().copied())
            .collect();
        let y: Vec<u32> = idx.iter().map(|i| digits.labels[*i]).collect();
        Ok((
            Tensor::from_vec(x, (idx.len(), 1, 8, 8), &dev)?,
            Tensor::from_vec(y, idx.len(), &dev)?,
        ))
    };
    let mut opt = AdamW::new(
        vars.clone(),
        ParamsAdamW {
            lr: config.learning_rate,
            weight_decay: 1e-4,
            ..Default::default()
        },
    )?;
    let mut train_order = train_idx.to_vec();
    for _ in 0..config.epochs {
        train_order.shuffle(&mut rng);
        for chunk in train_order.chunks(config.batch_size) {
            let (x, y) = batch(chunk)?;
            let logits = forward_layers(&layers(), &x)?;
            let loss = candle_nn::loss::cross_entropy(&logits, &y)?;
            opt.backward_step(&loss)?;
        }
    }
    let accuracy = |idx: &[usize]| -> Result<f64> {
        let (x, y) = batch(idx)?;
        let pred = forward_layers(&layers(), &x)?.argmax(1)?;
        let correct = pred
            .eq(&y)?
            .to_dtype(DType::F32)?
            .sum_all()?
            .to_scalar::<f32>()?;
        Ok(correct as f64 / idx.len() as f64)
    };
    let report = TrainReport {
        model: ID.into(),
        data: "scikit-learn digits (sklearn/datasets/data/digits.csv.gz)".into(),
        data_sha256: data_sha256.into(),
        train_size: train_idx.len(),
        test_size: test_idx.len(),
        train_accuracy: accuracy(train_idx)?,
        test_accuracy: accuracy(test_idx)?,
        config: config.clone(),
    };
    let mut model_layers = Vec::new();
    for (spec, wb) in &specs {
        let flat = |t: &Var| -> Result<Vec<f32>> { Ok(t.as_tensor().flatten_all()?.to_vec1()?) };
        model_layers.push(match (spec, wb) {
            (
                LayerSpec::Conv2d {
                    in_channels,
                    out_channels,
                    kernel,
                    padding,
                    ..
                },
                Some((w, b)),
            ) => Layer::Conv2d {
                weight: flat(w)?,
                bias: flat(b)?,
                out_channels: *out_channels,
                in_channels: *in_channels,
                kernel: *kernel,
                padding: *padding,
            },
            (
                LayerSpec::Linear {
                    in_features,
                    out_features,
                    ..
                },
                Some((w, b)),
            ) => Layer::Linear {
                weight: flat(w)?,
                bias: flat(b)?,
                out_features: *out_features,
                in_features: *in_features,
            },
            (LayerSpec::Relu, _) => Layer::Relu,
            (LayerSpec::MaxPool2, _) => Layer::MaxPool2,
            _ => Layer::Flatten,
        });
    }
    Ok((
        ImageModel {
            id: ID.into(),
            input_shape: INPUT_SHAPE,
            layers: model_layers,
            classes: 10,
            weights_sha256: String::new(),
        },
        report,
    ))
}

/// Save weights as safetensors; returns the file's sha256.
pub fn save(model: &ImageModel, path: &Path) -> Result<String> {
    let tensors = super::named_tensors(&ARCH, &model.layers)?;
    candle_core::safetensors::save(&tensors, path)?;
    super::sha256_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_weights_load_and_classify_ten_classes() {
        let m = embedded();
        assert_eq!(m.classes, 10);
        assert_eq!(m.layers.len(), ARCH.len());
        assert_eq!(m.weights_sha256.len(), 64);
    }
}
