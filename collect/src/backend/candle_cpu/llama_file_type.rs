//! Which ggml type `llama-quantize` gives each matrix of a model requantised to one of its file
//! types (`llama_tensor_get_type`, no importance matrix, no overrides): a file type names a mix,
//! not one type. The output head (or the token embeddings it is tied to) is kept at Q6_K or
//! finer; Q4_K_M and Q5_K_M give `attn_v` and `ffn_down` Q6_K in the first and last eighth of the
//! layers and every third between; a matrix whose rows are not a whole number of blocks falls back
//! to a type whose blocks fit (Q6_K to Q8_0, Q5_K to Q5_1, Q4_K to Q5_0). SmolLM2's rows of 576
//! weights are not a multiple of the K-quants' 256, so its "Q6_K" file holds 181 Q8_0 matrices
//! and 30 Q6_K ones (the `ffn_down` rows of 1536): its answers carry mostly Q8_0's rounding, and
//! only references of the same mix tell the two apart.

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::Tensor;
use hspi_datasets::{GgufType, NumericFormat};

use super::ggml_quants::quantize_kquant;
use crate::error::Result;

/// What a matrix is to the model, as far as the type choice goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role<'a> {
    /// The output head, or the token embeddings where the output is tied to them.
    Output,
    /// The token embeddings of a model with an output head of its own.
    Embeddings,
    /// Block `layer` of `layers`'s matrix of GGUF name `matrix` (`attn_v`, `ffn_down`, …).
    Block {
        matrix: &'a str,
        layer: usize,
        layers: usize,
    },
}

/// The file type a GGUF file says it is (`general.file_type`, llama.cpp's `llama_ftype`), for
/// the file types hspi computes: such a file's matrices load as they are.
pub fn file_format(content: &gguf_file::Content) -> Option<NumericFormat> {
    let ftype = content.metadata.get("general.file_type")?.to_u32().ok()?;
    Some(match ftype {
        0 => NumericFormat::F32,
        1 => NumericFormat::F16,
        2 => NumericFormat::Gguf(GgufType::Q4_0),
        3 => NumericFormat::Gguf(GgufType::Q4_1),
        7 => NumericFormat::Gguf(GgufType::Q8_0),
        8 => NumericFormat::Gguf(GgufType::Q5_0),
        9 => NumericFormat::Gguf(GgufType::Q5_1),
        15 => NumericFormat::Gguf(GgufType::Q4KM),
        17 => NumericFormat::Gguf(GgufType::Q5KM),
        18 => NumericFormat::Gguf(GgufType::Q6K),
        _ => return None,
    })
}

/// The ggml type of `format`'s own blocks (a mix's default), for the file types hspi
/// requantises to.
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
        NumericFormat::Gguf(GgufType::Q5KM) => GgmlDType::Q5K,
        NumericFormat::Gguf(GgufType::Q4KM) => GgmlDType::Q4K,
        _ => return None,
    })
}

/// The type llama.cpp falls back to where a row of `columns` weights is no whole number of
/// `t`'s blocks (`tensor_type_fallback`).
fn fallback(t: GgmlDType, columns: usize) -> GgmlDType {
    if columns.is_multiple_of(t.block_size()) {
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

/// llama.cpp's `use_more_bits`: the first and last eighth of the layers, and every third between.
fn use_more_bits(layer: usize, layers: usize) -> bool {
    let (layer, layers) = (layer as i64, layers as i64);
    layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2
}

/// The type of a matrix of `role` with rows of `columns` weights in a file of type `format`;
/// None where hspi does not requantise to `format`. Float file types keep every matrix at
/// their type.
pub fn tensor_type(format: NumericFormat, role: Role, columns: usize) -> Option<GgmlDType> {
    let base = ggml_type(format)?;
    if matches!(base, GgmlDType::F32 | GgmlDType::F16) {
        return Some(base);
    }
    let mixed = matches!(format, NumericFormat::Gguf(GgufType::Q5KM | GgufType::Q4KM));
    let chosen = match role {
        // The output head at Q8_0 where its rows fit no 256-block, else at Q6_K unless the file
        // is Q8_0.
        Role::Output if !columns.is_multiple_of(GgmlDType::Q6K.block_size()) => {
            return Some(GgmlDType::Q8_0)
        }
        Role::Output if base == GgmlDType::Q8_0 => return Some(GgmlDType::Q8_0),
        Role::Output => GgmlDType::Q6K,
        Role::Block {
            matrix: "attn_v" | "ffn_down",
            layer,
            layers,
        } if mixed && use_more_bits(layer, layers) => GgmlDType::Q6K,
        Role::Embeddings | Role::Block { .. } => base,
    };
    Some(fallback(chosen, columns))
}

/// Quantise `t` to `dtype` as llama-quantize does (ggml's own quantiser where candle's differs).
pub fn quantize(t: &Tensor, dtype: GgmlDType) -> Result<QTensor> {
    match quantize_kquant(t, dtype)? {
        Some(q) => Ok(q),
        None => Ok(QTensor::quantize(t, dtype)?),
    }
}

/// The GGUF formats candle runs a model at (its own quantised types, every matrix at one).
pub fn candle_formats() -> Vec<NumericFormat> {
    [
        NumericFormat::F32,
        NumericFormat::F16,
        NumericFormat::Gguf(GgufType::Q8_0),
        NumericFormat::Gguf(GgufType::Q4_0),
        NumericFormat::Gguf(GgufType::Q4_1),
    ]
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q6K: NumericFormat = NumericFormat::Gguf(GgufType::Q6K);
    const Q4_0: NumericFormat = NumericFormat::Gguf(GgufType::Q4_0);
    const Q8_0: NumericFormat = NumericFormat::Gguf(GgufType::Q8_0);

    /// The types llama-quantize wrote for SmolLM2 (rows of 576 and 1536 weights), read from its
    /// files with gguf-py: Q6_K's 181 Q8_0 and 30 Q6_K matrices, Q4_0's tied head at Q8_0.
    fn block(matrix: &str, layer: usize) -> Role<'_> {
        Role::Block {
            matrix,
            layer,
            layers: 30,
        }
    }

    /// The types llama-quantize wrote for SmolLM2 (30 layers, rows of 576 and 1536 weights),
    /// read from its files with gguf-py: Q6_K's 181 Q8_0 and 30 Q6_K matrices, Q4_0's tied head
    /// at Q8_0, Q5_K_M's `ffn_down` at Q6_K in layers 0–2, 5, 8, … and Q5_K elsewhere, its
    /// `attn_v` at Q8_0 (Q6_K's fallback) there and Q5_1 (Q5_K's) elsewhere.
    #[test]
    fn smollm2s_mixes_are_llama_quantizes() {
        let (q5km, q4km) = (
            NumericFormat::Gguf(GgufType::Q5KM),
            NumericFormat::Gguf(GgufType::Q4KM),
        );
        assert_eq!(
            tensor_type(Q6K, block("attn_q", 0), 576),
            Some(GgmlDType::Q8_0)
        );
        assert_eq!(
            tensor_type(Q6K, block("ffn_down", 4), 1536),
            Some(GgmlDType::Q6K)
        );
        assert_eq!(tensor_type(Q6K, Role::Output, 576), Some(GgmlDType::Q8_0));
        assert_eq!(tensor_type(Q4_0, Role::Output, 576), Some(GgmlDType::Q8_0));
        assert_eq!(
            tensor_type(Q4_0, block("ffn_down", 0), 1536),
            Some(GgmlDType::Q4_0)
        );
        assert_eq!(tensor_type(Q8_0, Role::Output, 4096), Some(GgmlDType::Q8_0));
        for (layer, more) in [
            (0, true),
            (2, true),
            (3, false),
            (5, true),
            (8, true),
            (26, true),
        ] {
            let (down, v) = if more {
                (GgmlDType::Q6K, GgmlDType::Q8_0)
            } else {
                (GgmlDType::Q5K, GgmlDType::Q5_1)
            };
            assert_eq!(
                tensor_type(q5km, block("ffn_down", layer), 1536),
                Some(down),
                "{layer}"
            );
            assert_eq!(
                tensor_type(q5km, block("attn_v", layer), 576),
                Some(v),
                "{layer}"
            );
        }
        assert_eq!(
            tensor_type(q5km, block("attn_q", 0), 576),
            Some(GgmlDType::Q5_1)
        );
        assert_eq!(
            tensor_type(q4km, block("attn_q", 0), 576),
            Some(GgmlDType::Q5_0)
        );
        assert_eq!(
            tensor_type(q4km, block("ffn_down", 3), 1536),
            Some(GgmlDType::Q4K)
        );
        // A wider model keeps its head at Q6_K.
        assert_eq!(tensor_type(Q4_0, Role::Output, 4096), Some(GgmlDType::Q6K));
        assert_eq!(
            tensor_type(NumericFormat::F16, Role::Output, 576),
            Some(GgmlDType::F16)
        );
        assert_eq!(
            tensor_type(NumericFormat::Bf16, block("attn_q", 0), 576),
            None
        );
    }
}
