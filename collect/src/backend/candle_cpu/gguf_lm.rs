//! GGUF language models at llama.cpp's formats: full-vocabulary next-token logits. Plain llama
//! models run on candle's quantized llama, every matrix requantised to the one format (the
//! collections and packs shipped so far were computed so, and keep their bits); every other
//! family (`crate::zoo::architecture`) and Llama 3's scaled rotations run on the all-positions
//! pass (`super::GgufAllPositions`), which requantises to the mix llama-quantize writes.

use std::io::Cursor;
use std::path::Path;

use candle_core::quantized::{gguf_file, QTensor};
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use hspi_datasets::NumericFormat;

use super::llama_file_type::ggml_type;
use crate::error::{CollectError, Result};

pub struct QuantizedLm {
    lm: Lm,
}

enum Lm {
    Llama(Box<ModelWeights>),
    Other(Box<super::GgufAllPositions>),
}

impl QuantizedLm {
    /// Load `path` with its matrices at `format` (a file of that very type loads as it is).
    pub fn load(path: &Path, format: NumericFormat) -> Result<QuantizedLm> {
        let bad = |reason: String| CollectError::BadWeights {
            model: "a GGUF language model".into(),
            path: path.into(),
            reason,
        };
        let target = ggml_type(format)
            .ok_or_else(|| bad(format!("candle cannot run this model at {format} (formats: f32 f16 q8_0 q4_0 q4_1 q5_0 q5_1)")))?;
        super::kernel_tier::pin();
        let dev = Device::Cpu;
        let mut file = std::fs::File::open(path).map_err(CollectError::io(path))?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| bad(e.to_string()))?;
        let config = crate::zoo::model_config::ModelConfig::from_gguf(&content, path)?;
        if config.architecture.family != "llama"
            || content.tensor_infos.contains_key("rope_freqs.weight")
        {
            let lm = super::GgufAllPositions::load(path, format, None)?;
            return Ok(QuantizedLm {
                lm: Lm::Other(Box::new(lm)),
            });
        }
        if super::llama_file_type::file_format(&content) == Some(format) {
            let weights = ModelWeights::from_gguf(content, &mut file, &dev)
                .map_err(|e| bad(e.to_string()))?;
            return Ok(QuantizedLm {
                lm: Lm::Llama(Box::new(weights)),
            });
        }
        let mut names: Vec<&String> = content.tensor_infos.keys().collect();
        names.sort();
        let mut tensors = Vec::with_capacity(names.len());
        for name in &names {
            let qt = content
                .tensor(&mut file, name, &dev)
                .map_err(|e| bad(e.to_string()))?;
            // Matrices change format; vectors (norms) stay f32 as in every GGUF.
            let qt = if qt.shape().rank() == 2 {
                let t: Tensor = qt.dequantize(&dev)?;
                QTensor::quantize(&t, target)?
            } else {
                qt
            };
            tensors.push(qt);
        }
        let mut metadata: Vec<(&str, &gguf_file::Value)> = content
            .metadata
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        metadata.sort_by_key(|(k, _)| *k);
        let named: Vec<(&str, &QTensor)> = names.iter().map(|n| n.as_str()).zip(&tensors).collect();
        let mut buf = Cursor::new(Vec::new());
        gguf_file::write(&mut buf, &metadata, &named)?;
        buf.set_position(0);
        let content = gguf_file::Content::read(&mut buf)?;
        let weights = ModelWeights::from_gguf(content, &mut buf, &dev)?;
        Ok(QuantizedLm {
            lm: Lm::Llama(Box::new(weights)),
        })
    }

    /// Logits over the whole vocabulary for the token after `tokens`, from a fresh context.
    pub fn next_token_logits(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let weights = match &mut self.lm {
            Lm::Llama(weights) => weights,
            Lm::Other(lm) => {
                let mut rows = lm.logits_from(tokens, tokens.len())?;
                return rows.pop().ok_or_else(|| {
                    CollectError::BadRequest("an empty context has no next token".into())
                });
            }
        };
        weights.clear_kv_cache();
        let x = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        let logits = weights.forward(&x, 0)?;
        Ok(logits
            .squeeze(0)?
            .to_dtype(candle_core::DType::F32)?
            .to_vec1()?)
    }
}
