//! hspi's own GPU pass as a teacher-forced reference engine (`--reference-gpu FORMAT`): the
//! model's weights on this machine's GPU at one of cuBLAS's precisions, every generated position
//! of an answer scored in one causal pass, as a serving engine computes prompt logprobs. For an
//! auditor with a GPU and a model too large for the CPU's formats. Loaded when named, so a
//! machine without the GPU or the weights is refused before any provider request is paid for.

use std::path::Path;

use hspi_datasets::{NumericFormat, Platform, TokenStep};

use crate::backend::AllPositions;
use crate::error::Result;
use crate::token_steps::forced_steps;
use crate::zoo::codec::Codec;

pub struct GpuReference {
    lm: Box<dyn AllPositions>,
    codec: Codec,
}

impl GpuReference {
    /// The weights at `weights` (a GGUF file or a checkpoint directory) on the GPU at `format`.
    pub fn load(format: NumericFormat, weights: &Path) -> Result<GpuReference> {
        Ok(GpuReference {
            codec: Codec::for_weights(weights)?,
            lm: crate::backend::gpu_all_positions(weights, format)?,
        })
    }

    pub fn platform(&self) -> &Platform {
        self.lm.platform()
    }

    /// The steps at each generated position of `context` (`prompt_len..`).
    pub fn steps(
        &mut self,
        context: &[u32],
        prompt_len: usize,
        top: usize,
    ) -> Result<Vec<TokenStep>> {
        let lm = &mut self.lm;
        forced_steps(&self.codec, context, prompt_len, top, |tokens, from| {
            lm.logits_from(tokens, from)
        })
    }
}
