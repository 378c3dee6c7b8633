//! candle's own CPU kernels (gemm crate, im2col convolution, quantized matmuls): image models at
//! f32, f16 or bf16 (`image.rs`), GGUF llama models at GGUF formats (`gguf_lm.rs`; every position
//! in one pass for teacher forcing: `gguf_all_positions.rs`) and at the
//! formats serving engines sell, bf16 to NVFP4, as those engines compute them
//! (`served_lm.rs`, the schemes in `crate::scheme`), the tiny LM at f32, f16 or bf16
//! (`tiny_lm.rs`). Language models run at batch size 1.

mod compact_matrix;
mod float_product;
mod ggml_quants;
mod gguf_all_positions;
mod gguf_lm;
mod image;
mod int8_product;
mod job_threads;
mod kept_weight;
mod kernel_tier;
mod kv_cache;
mod llama_file_type;
mod served_lm;
mod tiny_lm;
mod torch_eager;
mod unpacked_activations;
mod unpacked_q5;
mod unpacked_q8;

pub use gguf_all_positions::GgufAllPositions;
pub use gguf_lm::QuantizedLm;
pub use image::CandleImage;
pub use int8_product::Int8Matrix;
pub use job_threads::jobs_own_the_cores;
pub use llama_file_type::{
    file_format as llama_file_format, quantize as llama_quantize, tensor_type as llama_tensor_type,
    Role,
};
pub use served_lm::{ServedLm, Tables as ServedTables};
pub use tiny_lm::TinyLmRunner;

use candle_core::DType;
use hspi_datasets::{Engine, EngineKind, Hardware, NumericFormat, Platform};

use super::{not_a_language_model, on_this_cpu, this_cpu, Backend, Batch, ImageRunner, Runner};
use crate::error::{CollectError, Result};
use crate::zoo::{ImageModel, Model, ModelId};

/// A tensor's values as their bits, for tests holding two computations equal bit for bit.
#[cfg(test)]
fn bits(t: &candle_core::Tensor) -> Vec<u32> {
    let values = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    values.iter().map(|v| v.to_bits()).collect()
}

/// candle on this machine's CPU.
pub struct CandleCpu;

/// The platforms hspi computes `model`'s references at on the provider's own tokens: the
/// formats the collection grid runs, and the llama.cpp file types only the all-positions pass
/// requantises to (`GgufAllPositions`).
pub fn forced_platforms() -> Vec<Platform> {
    let mut formats = language_model_formats();
    for f in gguf_all_positions::formats() {
        if !formats.contains(&f) {
            formats.push(f);
        }
    }
    formats.into_iter().map(platform).collect()
}

/// The platform of `format` where it is one of llama.cpp's formats with a q8_0 or q4_0 KV cache
/// (`f16+kv-q8_0`: the all-positions pass rounds keys, values and queries as llama.cpp's flash
/// attention does) or a market format with vLLM's fp8 cache (`bf16+kv-fp8-e4m3`: the served
/// path rounds keys and values as vLLM stores them). None for any other format
/// ([`forced_platforms`] lists those).
pub fn kv_cached_platform(format: NumericFormat) -> Option<Platform> {
    use hspi_datasets::KvCache;
    let computed = match format.kv_cache() {
        Some(KvCache::Q8_0 | KvCache::Q4_0) => {
            gguf_all_positions::formats().contains(&format.weights())
        }
        Some(KvCache::Fp8E4m3 | KvCache::Fp8E5m2) => crate::scheme::serving(format).is_some(),
        None => false,
    };
    computed.then(|| platform(format))
}

/// The platforms hspi serves any GGUF language model at: llama.cpp's formats candle runs and the
/// market's schemes (`pack build --formats`).
pub fn language_model_platforms() -> Vec<Platform> {
    language_model_formats().into_iter().map(platform).collect()
}

/// The platform hspi serves a GGUF language model at in `format`, if its engine computes it:
/// those [`language_model_platforms`] lists, and INT4 W4A16 at any group (the list names group
/// 64; whether a group fits the model's widths is the model's to say when it loads).
pub fn language_model_platform(format: NumericFormat) -> Option<Platform> {
    computes(&language_model_formats(), format).then(|| platform(format))
}

/// Whether `format` is one of `formats`, INT4 W4A16 at any group counting as the listed one.
fn computes(formats: &[NumericFormat], format: NumericFormat) -> bool {
    let int4 = |f: &NumericFormat| matches!(f, NumericFormat::Int4W4a16 { .. });
    formats.contains(&format) || (int4(&format) && formats.iter().any(int4))
}

/// A GGUF language model's formats: llama.cpp's that candle runs, the market's schemes and
/// engines' own paths of them.
fn language_model_formats() -> Vec<NumericFormat> {
    let mut formats = llama_file_type::candle_formats();
    for market in crate::scheme::market_formats() {
        formats.push(market);
        formats.extend(crate::scheme::engine_paths(market));
    }
    formats
}

/// About how many bytes a weight of `format` takes held by the reference engines: llama.cpp's
/// types at their block sizes (the K-quant mixes as their files measure), the market's formats
/// as bf16 bits, or a byte and its row's values (INT8, FP8 W8A8). For sizing, not accounting.
pub fn held_bytes_per_weight(format: NumericFormat) -> f64 {
    use hspi_datasets::GgufType;
    match format {
        NumericFormat::F32 => 4.0,
        NumericFormat::Gguf(GgufType::Q8_0) => 1.07,
        NumericFormat::Gguf(GgufType::Q6K) => 0.83,
        NumericFormat::Gguf(GgufType::Q5KM | GgufType::Q5_0 | GgufType::Q5_1) => 0.72,
        NumericFormat::Gguf(GgufType::Q4KM | GgufType::Q4K | GgufType::Q4_1) => 0.63,
        NumericFormat::Gguf(GgufType::Q4_0) => 0.57,
        NumericFormat::Int8W8a8 | NumericFormat::Fp8W8a8 => 1.5,
        _ => 2.0,
    }
}

/// candle's dtype for `format`, when candle computes in it directly.
pub fn dtype(format: NumericFormat) -> Option<DType> {
    match format {
        NumericFormat::F32 => Some(DType::F32),
        NumericFormat::F16 => Some(DType::F16),
        NumericFormat::Bf16 => Some(DType::BF16),
        _ => None,
    }
}

/// The formats candle runs `model` at.
fn formats(model: ModelId) -> Vec<NumericFormat> {
    match model {
        ModelId::CnnDigits | ModelId::TinyLm => {
            vec![NumericFormat::F32, NumericFormat::F16, NumericFormat::Bf16]
        }
        ModelId::SmolLm2 => language_model_formats(),
    }
}

fn platform(format: NumericFormat) -> Platform {
    Platform {
        hardware: this_cpu(),
        engine: Engine {
            kind: EngineKind::Candle,
            version: Some(crate::CANDLE_VERSION.into()),
        },
        format,
        kernel: None,
        batch_size: 1,
    }
}

impl Backend for CandleCpu {
    fn name(&self) -> &'static str {
        "candle"
    }

    fn owns(&self, platform: &Platform) -> bool {
        matches!(platform.hardware, Hardware::Cpu { .. })
            && platform.engine.kind == EngineKind::Candle
    }

    fn platforms(&self, model: ModelId) -> Result<Vec<Platform>> {
        Ok(formats(model).into_iter().map(platform).collect())
    }

    fn check(&self, model: &Model, platform: &Platform) -> Result<()> {
        let id = model.info().id;
        on_this_cpu(platform, &id)?;
        if let Model::Image(m) = model {
            // Building an image runner is cheap and validates the platform.
            return self.image_runner(m, platform).map(drop);
        }
        let unsupported = |reason: String| CollectError::Unsupported {
            platform: platform.to_string(),
            model: id.clone(),
            reason,
        };
        if platform.kernel.is_some() {
            return Err(unsupported(
                "language models run on candle's own kernels only".into(),
            ));
        }
        if platform.batch_size != 1 {
            return Err(unsupported(
                "language-model collection runs at batch size 1".into(),
            ));
        }
        let formats = formats(model.id());
        if !computes(&formats, platform.format) {
            let list: Vec<String> = formats.iter().map(|f| f.to_string()).collect();
            return Err(unsupported(format!(
                "formats for this model: {}",
                list.join(" ")
            )));
        }
        Ok(())
    }

    fn image_runner(
        &self,
        model: &ImageModel,
        platform: &Platform,
    ) -> Result<Box<dyn ImageRunner>> {
        on_this_cpu(platform, &model.id)?;
        Ok(Box::new(CandleImage::new(platform, model)?))
    }

    fn lm_runner(&self, model: &Model, platform: &Platform) -> Result<Box<dyn Runner>> {
        let lm = match model {
            Model::Lm { path, .. } if crate::scheme::serving(platform.format).is_some() => {
                let weights = crate::zoo::decoder_weights::load(path)?;
                Lm::Served(Box::new(ServedLm::new(&weights, platform.format)?))
            }
            Model::Lm { path, .. } => Lm::Gguf(QuantizedLm::load(path, platform.format)?),
            Model::Tiny(lm) => Lm::Tiny(TinyLmRunner::new(lm, platform.format)?),
            Model::Image(_) => return Err(not_a_language_model(platform)),
        };
        Ok(Box::new(CandleLm {
            platform: platform.clone(),
            lm,
        }))
    }
}

enum Lm {
    Gguf(QuantizedLm),
    Served(Box<ServedLm>),
    Tiny(TinyLmRunner),
}

/// A language model on candle, one prompt at a time.
struct CandleLm {
    platform: Platform,
    lm: Lm,
}

impl Runner for CandleLm {
    fn platform(&self) -> &Platform {
        &self.platform
    }

    fn forward(&mut self, batch: Batch<'_>) -> Result<Vec<Vec<f32>>> {
        batch
            .tokens(&self.platform)?
            .iter()
            .map(|ids| match &mut self.lm {
                Lm::Gguf(lm) => lm.next_token_logits(ids),
                Lm::Served(lm) => lm.next_token_logits(ids),
                Lm::Tiny(lm) => lm.next_token_logits(ids),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// INT4 W4A16 is served at any group (whether it fits a model's widths is the model's to
    /// say); a format the engine does not compute is none.
    #[test]
    fn int4_w4a16_is_served_at_any_group() {
        for group in [32, 64, 128] {
            let format = NumericFormat::Int4W4a16 { group };
            assert_eq!(language_model_platform(format).unwrap().format, format);
        }
        assert!(language_model_platform(NumericFormat::Tf32).is_none());
    }
}
