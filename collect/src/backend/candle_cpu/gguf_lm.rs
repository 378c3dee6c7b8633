//! GGUF language models at llama.cpp's formats: full-vocabulary next-token logits, on the
//! all-positions pass (`super::GgufAllPositions`). Plain llama models are candle's own engine:
//! every matrix requantised by candle to the one format, each context computed whole (as the
//! candle collections shipped were computed; their float products now in hspi's one summation
//! order); every other family (`crate::zoo::architecture`) and Llama 3's scaled rotations take
//! the mix llama-quantize writes.

use std::path::Path;

use candle_core::quantized::gguf_file;
use hspi_datasets::NumericFormat;

use super::llama_file_type::ggml_type;
use crate::error::{CollectError, Result};

pub struct QuantizedLm {
    lm: Box<super::GgufAllPositions>,
    /// Each context computed whole (candle's engine), or its prefix kept between calls.
    whole: bool,
}

impl QuantizedLm {
    /// Load `path` with its matrices at `format` (a file of that very type loads as it is).
    pub fn load(path: &Path, format: NumericFormat) -> Result<QuantizedLm> {
        let bad = |reason: String| CollectError::BadWeights {
            model: "a GGUF language model".into(),
            path: path.into(),
            reason,
        };
        ggml_type(format)
            .ok_or_else(|| bad(format!("candle cannot run this model at {format} (formats: f32 f16 q8_0 q4_0 q4_1 q5_0 q5_1)")))?;
        let mut file = std::fs::File::open(path).map_err(CollectError::io(path))?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| bad(e.to_string()))?;
        let config = crate::zoo::model_config::ModelConfig::from_gguf(&content, path)?;
        let plain_llama = config.architecture.family == "llama"
            && !content.tensor_infos.contains_key("rope_freqs.weight");
        let lm = match plain_llama {
            true => super::GgufAllPositions::load_uniform(path, format)?,
            false => super::GgufAllPositions::load(path, format, None)?,
        };
        Ok(QuantizedLm {
            lm: Box::new(lm),
            whole: plain_llama,
        })
    }

    /// Logits over the whole vocabulary for the token after `tokens`.
    pub fn next_token_logits(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let mut rows = match self.whole {
            true => self.lm.logits_whole(tokens, tokens.len())?,
            false => self.lm.logits_from(tokens, tokens.len())?,
        };
        rows.pop()
            .ok_or_else(|| CollectError::BadRequest("an empty context has no next token".into()))
    }
}
