//! Other models behind SmolLM2's name, made from what the project has: SmolLM2 with some of its
//! blocks removed (a cheaper, smaller model), and SmolLM2 with its weights perturbed (another
//! fine-tune of the same architecture), written as GGUF files llama-server serves.

use std::path::{Path, PathBuf};

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use rand::{Rng, SeedableRng};

/// How a substitute differs from SmolLM2.
#[derive(Debug, Clone, Copy)]
pub enum Surgery {
    /// Keep the first `keep` of its 30 blocks.
    FirstBlocks(usize),
    /// Drop every `n`-th block.
    EveryNth(usize),
    /// Add Gaussian noise of `scale` times each matrix's RMS to every matrix (seeded).
    Noise(f32),
}

/// `gguf` (SmolLM2) changed by `surgery`, written to `out` at F16.
pub fn write(gguf: &Path, surgery: Surgery, out: &Path) -> PathBuf {
    let dev = Device::Cpu;
    let mut file = std::fs::File::open(gguf).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    let blocks = content.metadata["llama.block_count"].to_u32().unwrap() as usize;
    let kept: Vec<usize> = match surgery {
        Surgery::FirstBlocks(k) => (0..k.min(blocks)).collect(),
        Surgery::EveryNth(n) => (0..blocks).filter(|b| (b + 1) % n != 0).collect(),
        Surgery::Noise(_) => (0..blocks).collect(),
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(37);
    let mut names: Vec<String> = content.tensor_infos.keys().cloned().collect();
    names.sort();
    let mut tensors: Vec<(String, QTensor)> = Vec::new();
    for name in &names {
        let renamed = match name.strip_prefix("blk.") {
            Some(rest) => {
                let (index, tail) = rest.split_once('.').unwrap();
                let index: usize = index.parse().unwrap();
                match kept.iter().position(|k| *k == index) {
                    Some(at) => format!("blk.{at}.{tail}"),
                    None => continue,
                }
            }
            None => name.clone(),
        };
        let qt = content.tensor(&mut file, name, &dev).unwrap();
        let t = qt.dequantize(&dev).unwrap();
        let t = match surgery {
            Surgery::Noise(scale) if t.rank() == 2 => {
                let values: Vec<f32> = t.flatten_all().unwrap().to_vec1().unwrap();
                let rms = (values.iter().map(|v| v * v).sum::<f32>() / values.len() as f32).sqrt();
                let noisy: Vec<f32> = values
                    .iter()
                    .map(|v| {
                        // Box-Muller from the seeded generator.
                        let (u1, u2): (f32, f32) = (rng.random_range(1e-7..1.0), rng.random());
                        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos();
                        v + scale * rms * z
                    })
                    .collect();
                Tensor::from_vec(noisy, t.shape(), &dev).unwrap()
            }
            _ => t,
        };
        let dtype = if t.rank() == 2 {
            GgmlDType::F16
        } else {
            GgmlDType::F32
        };
        tensors.push((renamed, QTensor::quantize(&t, dtype).unwrap()));
    }
    let block_count = gguf_file::Value::U32(kept.len() as u32);
    let mut metadata: Vec<(&str, &gguf_file::Value)> = content
        .metadata
        .iter()
        .filter(|(k, _)| k.as_str() != "llama.block_count" && k.as_str() != "general.file_type")
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    metadata.push(("llama.block_count", &block_count));
    metadata.sort_by_key(|(k, _)| *k);
    let named: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut w = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
    gguf_file::write(&mut w, &metadata, &named).unwrap();
    out.to_path_buf()
}
