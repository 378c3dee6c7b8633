//! The tiny LM (hspi's own character-level transformer) on candle's CPU kernels.

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor};
use hspi_datasets::NumericFormat;

use crate::error::{CollectError, Result};
use crate::zoo::tiny_lm::{forward, Config, TinyLm};

/// Runs the tiny LM at one format (f32, f16 or bf16).
pub struct TinyLmRunner {
    config: Config,
    tensors: HashMap<String, Tensor>,
}

impl TinyLmRunner {
    pub fn new(lm: &TinyLm, format: NumericFormat) -> Result<TinyLmRunner> {
        let dtype = super::dtype(format).ok_or_else(|| CollectError::Unsupported {
            platform: format.to_string(),
            model: crate::zoo::tiny_lm::ID.into(),
            reason: "candle runs the tiny LM at f32, f16 or bf16".into(),
        })?;
        Ok(TinyLmRunner {
            config: lm.config,
            tensors: lm.at_dtype(dtype)?,
        })
    }

    /// Next-token logits (f32) after the last `context` tokens of `ids`.
    pub fn next_token_logits(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let ids = &ids[ids.len().saturating_sub(self.config.context)..];
        let x = Tensor::new(ids, &Device::Cpu)?.unsqueeze(0)?;
        let logits = forward(&self.config, &self.tensors, &x)?;
        let last = logits.squeeze(0)?.get(ids.len() - 1)?;
        Ok(last.to_dtype(DType::F32)?.to_vec1()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_model_round_trips_text_and_predicts_in_all_dtypes() {
        let lm = TinyLm::embedded();
        let ids = lm.encode("In the beginning God").unwrap();
        assert_eq!(lm.decode(&ids), "In the beginning God");
        let f32_logits = TinyLmRunner::new(&lm, NumericFormat::F32)
            .unwrap()
            .next_token_logits(&ids)
            .unwrap();
        let bf16_logits = TinyLmRunner::new(&lm, NumericFormat::Bf16)
            .unwrap()
            .next_token_logits(&ids)
            .unwrap();
        assert_eq!(f32_logits.len(), lm.vocab.len());
        assert_ne!(f32_logits, bf16_logits);
        assert!(lm.encode("€").is_err());
    }
}
