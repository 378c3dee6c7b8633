//! Which ggml type `llama-quantize` gives each matrix of a model requantised to one of its file
//! types (no importance matrix, no overrides): a file type names a mix, not one type. The output
//! head (or the token embeddings it is tied to) is kept at Q6_K or finer, and a matrix whose rows
//! are not a whole number of blocks falls back to a type whose blocks fit (Q6_K to Q8_0): SmolLM2's
//! rows of 576 weights are not a multiple of the K-quants' 256, so its "Q6_K" file holds 181 Q8_0
//! matrices and 30 Q6_K ones (the `ffn_down` rows of 1536). References must hold the same mix:
//! answers of such a file carry mostly Q8_0's rounding.

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Tensor;
use hspi_datasets::{GgufType, NumericFormat};

use super::ggml_quants::quantize_q6k;
use crate::error::Result;

/// What a matrix is to the model, as far as the type choice goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The output head, or the token embeddings where the output is tied to them.
    Output,
    /// The token embeddings of a model with an output head of its own.
    Embeddings,
    /// Any block's matrix.
    Block,
}

/// The ggml type of `format`'s own blocks, for the file types hspi requantises to.
pub fn ggml_type(format: NumericFormat) -> Option<GgmlDType> {
    Some(match format {
        NumericFormat::F32 => GgmlDType::F32,
        NumericFormat::F16 => GgmlDType::F16,
        NumericFormat::Gguf(GgufType::Q8_0) => GgmlDType::Q8_0,
        NumericFormat::Gguf(GgufType::Q4_0) => GgmlDType::Q4_0,
        NumericFormat::Gguf(GgufType::Q4_1) => GgmlDType::Q4_1,
        NumericFormat::Gguf(GgufType::Q5_0) => GgmlDType::Q5_0,
        NumericFormat::Gguf(GgufType::Q5_1) => GgmlDType::Q5_1,
        NumericFormat::Gguf(GgufType::Q6K) => GgmlDType::Q6K,
        _ => return None,
    })
}

/// The type llama.cpp falls back to where a row of `columns` weights is no whole number of
/// `t`'s blocks (`tensor_type_fallback`).
fn fallback(t: GgmlDType, columns: usize) -> GgmlDType {
    if columns % t.block_size() == 0 {
        return t;
    }
    match t {
        GgmlDType::Q6K => GgmlDType::Q8_0,
        GgmlDType::Q5K => GgmlDType::Q5_1,
        GgmlDType::Q4K => GgmlDType::Q5_0,
        GgmlDType::Q2K | GgmlDType::Q3K => GgmlDType::Q4_0,
        other => other,
    }
}

/// The type of a matrix of `role` with rows of `columns` weights in a file of type `format`;
/// None where hspi does not requantise to `format`. Float file types keep every matrix at
/// their type.
pub fn tensor_type(format: NumericFormat, role: Role, columns: usize) -> Option<GgmlDType> {
    let base = ggml_type(format)?;
    if matches!(base, GgmlDType::F32 | GgmlDType::F16) {
        return Some(base);
    }
    Some(match role {
        // `llama_tensor_get_type`: the output head at Q8_0 where its rows fit no 256-block,
        // else at Q6_K unless the file is Q8_0.
        Role::Output if columns % GgmlDType::Q6K.block_size() != 0 => GgmlDType::Q8_0,
        Role::Output if base == GgmlDType::Q8_0 => GgmlDType::Q8_0,
        Role::Output => GgmlDType::Q6K,
        Role::Embeddings | Role::Block => fallback(base, columns),
    })
}

/// Quantise `t` to `dtype` as llama-quantize does (ggml's own quantiser where candle's differs).
pub fn quantize(t: &Tensor, dtype: GgmlDType) -> Result<QTensor> {
    if dtype == GgmlDType::Q6K {
        return quantize_q6k(t);
    }
    Ok(QTensor::quantize(t, dtype)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q6K: NumericFormat = NumericFormat::Gguf(GgufType::Q6K);
    const Q4_0: NumericFormat = NumericFormat::Gguf(GgufType::Q4_0);
    const Q8_0: NumericFormat = NumericFormat::Gguf(GgufType::Q8_0);

    /// The types llama-quantize wrote for SmolLM2 (rows of 576 and 1536 weights), read from its
    /// files with gguf-py: Q6_K's 181 Q8_0 and 30 Q6_K matrices, Q4_0's tied head at Q8_0.
    #[test]
    fn smollm2s_mixes_are_llama_quantizes() {
        assert_eq!(tensor_type(Q6K, Role::Block, 576), Some(GgmlDType::Q8_0));
        assert_eq!(tensor_type(Q6K, Role::Block, 1536), Some(GgmlDType::Q6K));
        assert_eq!(tensor_type(Q6K, Role::Output, 576), Some(GgmlDType::Q8_0));
        assert_eq!(tensor_type(Q4_0, Role::Output, 576), Some(GgmlDType::Q8_0));
        assert_eq!(tensor_type(Q4_0, Role::Block, 576), Some(GgmlDType::Q4_0));
        assert_eq!(tensor_type(Q8_0, Role::Output, 4096), Some(GgmlDType::Q8_0));
        // A wider model keeps its head at Q6_K.
        assert_eq!(tensor_type(Q4_0, Role::Output, 4096), Some(GgmlDType::Q6K));
        assert_eq!(
            tensor_type(NumericFormat::F16, Role::Output, 576),
            Some(GgmlDType::F16)
        );
        assert_eq!(tensor_type(NumericFormat::Bf16, Role::Block, 576), None);
    }
}
