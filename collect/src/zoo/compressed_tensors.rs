//! Hugging Face safetensors checkpoints, compressed-tensors ones as providers publish them for
//! vLLM included: a quantised layer's stored weights and scales are read exactly and dequantised
//! as the format's kernel sees them (the values `crate::scheme`'s schemes leave after their
//! round to nearest), so a checkpoint whose scales came from calibration (AWQ, GPTQ,
//! SmoothQuant) is computed as published rather than re-made. Layouts from compressed-tensors
//! 0.19 (`compressors/pack_quantized/helpers.py`, `compressors/nvfp4/helpers.py`,
//! `quantization/lifecycle/forward_helpers.py`).

use std::path::Path;

use hspi_datasets::NumericFormat;
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use serde_json::Value;

use crate::error::{CollectError, Result};
use crate::rounding::round_bf16;

fn bad(path: &Path, reason: impl Into<String>) -> CollectError {
    CollectError::BadWeights {
        model: "llama".into(),
        path: path.into(),
        reason: reason.into(),
    }
}

/// The compressed-tensors layouts hspi reads, as `quantization_config.format` names them.
const LAYOUTS: &str = "int-quantized, float-quantized, pack-quantized, nvfp4-pack-quantized";

/// The market format a checkpoint's `quantization_config` describes (`None`: not quantised).
pub fn format_of(config: &Value, path: &Path) -> Result<Option<NumericFormat>> {
    let q = &config["quantization_config"];
    if q.is_null() {
        return Ok(None);
    }
    let method = q["quant_method"].as_str().unwrap_or("");
    if method != "compressed-tensors" {
        return Err(bad(
            path,
            format!("quant_method {method:?}: hspi reads compressed-tensors checkpoints only"),
        ));
    }
    let groups = q["config_groups"].as_object().map_or(0, |g| g.len());
    let group = q["config_groups"]
        .as_object()
        .and_then(|g| g.values().next())
        .filter(|_| groups == 1)
        .ok_or_else(|| {
            bad(
                path,
                format!("{groups} quantization config groups; hspi reads checkpoints with one"),
            )
        })?;
    let layout = group["format"]
        .as_str()
        .or_else(|| q["format"].as_str())
        .unwrap_or("");
    let (w, a) = (&group["weights"], &group["input_activations"]);
    let bits = |args: &Value| args["num_bits"].as_u64().unwrap_or(0);
    let kind = |args: &Value| args["type"].as_str().unwrap_or("").to_string();
    let strategy = |args: &Value| args["strategy"].as_str().unwrap_or("").to_string();
    let per_token = !a.is_null()
        && a["dynamic"].as_bool() == Some(true)
        && strategy(a) == "token"
        && bits(a) == 8;
    let format = match layout {
        "int-quantized" if bits(w) == 8 && strategy(w) == "channel" && per_token => {
            Some(NumericFormat::Int8W8a8)
        }
        "float-quantized" if bits(w) == 8 && strategy(w) == "channel" && per_token => {
            Some(NumericFormat::Fp8W8a8)
        }
        "float-quantized" if bits(w) == 8 && strategy(w) == "channel" && a.is_null() => {
            Some(NumericFormat::Fp8W8a16)
        }
        "pack-quantized" if bits(w) == 4 && kind(w) == "int" && a.is_null() => w["group_size"]
            .as_u64()
            .filter(|_| strategy(w) == "group")
            .map(|g| NumericFormat::Int4W4a16 { group: g as u32 }),
        "nvfp4-pack-quantized" if a.is_null() => Some(NumericFormat::NvFp4A16),
        "nvfp4-pack-quantized" => Some(NumericFormat::NvFp4W4a4),
        _ => None,
    };
    format.map(Some).ok_or_else(|| {
        bad(
            path,
            format!(
                "compressed-tensors {layout:?} with weights {} {}-bit {} and activations {}: not a format hspi computes (it reads {LAYOUTS} as INT8 W8A8, FP8 W8A8 or W8A16 per channel, INT4 W4A16 in groups, NVFP4)",
                kind(w),
                bits(w),
                strategy(w),
                if a.is_null() { "unquantised".to_string() } else { format!("{} {}-bit {}", kind(a), bits(a), strategy(a)) }
            ),
        )
    })
}

/// A float tensor's values in f32.
pub fn floats(view: &TensorView<'_>, name: &str, path: &Path) -> Result<Vec<f32>> {
    let data = view.data();
    Ok(match view.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::F8_E4M3 => data.iter().map(|b| e4m3(*b)).collect(),
        other => {
            return Err(bad(
                path,
                format!("{name}: dtype {other:?} where a float tensor belongs"),
            ))
        }
    })
}

/// An OCP E4M3 (`float8_e4m3fn`) byte's value: bias 7, no infinities, 0x7f/0xff NaN.
fn e4m3(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((b >> 3) & 0xf) as i32, (b & 7) as f32);
    if e == 0xf && m == 7.0 {
        return f32::NAN;
    }
    sign * if e == 0 {
        m / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f32.powi(e - 7)
    }
}

/// E2M1 code (sign bit 3, magnitude index bits 0–2) to its value.
fn e2m1(code: u8) -> f32 {
    const MAGNITUDE: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let v = MAGNITUDE[(code & 7) as usize];
    if code & 8 != 0 {
        -v
    } else {
        v
    }
}

/// The `i`-th 4-bit code of a little-endian packed stream (even elements in the low nibble).
fn code(bytes: &[u8], i: usize) -> u8 {
    let byte = bytes[i / 2];
    if i.is_multiple_of(2) {
        byte & 0xf
    } else {
        byte >> 4
    }
}

/// A checkpoint's tensors by name, with the path for errors.
pub struct Tensors<'a> {
    pub st: SafeTensors<'a>,
    pub path: &'a Path,
}

impl<'a> Tensors<'a> {
    fn view(&self, name: &str) -> Result<TensorView<'a>> {
        self.st
            .tensor(name)
            .map_err(|_| bad(self.path, format!("tensor {name} missing")))
    }

    pub fn has(&self, name: &str) -> bool {
        self.st.tensor(name).is_ok()
    }

    /// A float tensor of exactly `len` values.
    pub fn floats(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        let v = floats(&self.view(name)?, name, self.path)?;
        if v.len() != len {
            return Err(bad(
                self.path,
                format!("{name}: {} values where {len} belong", v.len()),
            ));
        }
        Ok(v)
    }

    fn bytes(&self, name: &str, dtype: Dtype, len: usize) -> Result<&'a [u8]> {
        let v = self.view(name)?;
        if v.dtype() != dtype || v.data().len() != len {
            return Err(bad(
                self.path,
                format!(
                    "{name}: {:?} of {} bytes where {dtype:?} of {len} bytes belong",
                    v.dtype(),
                    v.data().len()
                ),
            ));
        }
        Ok(v.data())
    }

    /// Linear layer `name` (`[rows, cols]`): its float weights as stored, or its quantised
    /// weights and scales in `format`'s layout, dequantised as the format's kernel sees them.
    pub fn linear(
        &self,
        name: &str,
        format: Option<NumericFormat>,
        rows: usize,
        cols: usize,
    ) -> Result<Vec<f32>> {
        let plain = format!("{name}.weight");
        let Some(format) = format else {
            return self.floats(&plain, rows * cols);
        };
        // Layers the recipe ignored stay in the model's dtype.
        if let Ok(v) = self.view(&plain) {
            if matches!(v.dtype(), Dtype::F32 | Dtype::F16 | Dtype::BF16) {
                return self.floats(&plain, rows * cols);
            }
        }
        let scales = |len: usize| self.floats(&format!("{name}.weight_scale"), len);
        match format {
            NumericFormat::Int8W8a8 => {
                let q = self.bytes(&plain, Dtype::I8, rows * cols)?;
                let s = scales(rows)?;
                Ok(q.iter()
                    .enumerate()
                    .map(|(i, b)| *b as i8 as f32 * s[i / cols])
                    .collect())
            }
            NumericFormat::Fp8W8a8 | NumericFormat::Fp8W8a16 => {
                let q = self.bytes(&plain, Dtype::F8_E4M3, rows * cols)?;
                let s = scales(rows)?;
                let weight_only = format == NumericFormat::Fp8W8a16;
                Ok(q.iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let v = e4m3(*b) * s[i / cols];
                        if weight_only {
                            round_bf16(v)
                        } else {
                            v
                        }
                    })
                    .collect())
            }
            NumericFormat::Int4W4a16 { group } => self.int4(name, rows, cols, group as usize),
            NumericFormat::NvFp4A16 | NumericFormat::NvFp4W4a4 => self.nvfp4(name, rows, cols),
            other => Err(bad(
                self.path,
                format!("{name}: hspi reads no {other} layout ({LAYOUTS})"),
            )),
        }
    }

    /// Nibble `i` of 4-bit values packed eight to an int32 (element `i` at bit `4i` of the dense
    /// little-endian stream), stored offset by 8: the signed value.
    fn nibble(words: &[u8], i: usize) -> f32 {
        code(words, i) as f32 - 8.0
    }

    /// INT4 in groups along the reduction (`pack-quantized`): `weight_packed` `[rows, cols/8]`
    /// int32, `weight_scale` `[rows, cols/group]`, `weight_zero_point` `[rows/8, cols/group]`
    /// packed along the rows (absent when symmetric); `(q − z)·s` in bf16.
    fn int4(&self, name: &str, rows: usize, cols: usize, group: usize) -> Result<Vec<f32>> {
        if group == 0 || !cols.is_multiple_of(group) || !cols.is_multiple_of(8) {
            return Err(bad(
                self.path,
                format!("{name}: {cols} columns are no multiple of the group {group} and of 8"),
            ));
        }
        let groups = cols / group;
        let q = self.bytes(
            &format!("{name}.weight_packed"),
            Dtype::I32,
            rows * cols / 2,
        )?;
        let s = self.floats(&format!("{name}.weight_scale"), rows * groups)?;
        let zero_name = format!("{name}.weight_zero_point");
        // Packed along dim 0: column g of the packed matrix holds rows 8k…8k+7 of group g.
        let zeros = if self.has(&zero_name) {
            Some(self.bytes(&zero_name, Dtype::I32, rows.div_ceil(8) * groups * 4)?)
        } else {
            None
        };
        let mut out = Vec::with_capacity(rows * cols);
        for r in 0..rows {
            for c in 0..cols {
                let g = c / group;
                let z = zeros.map_or(0.0, |z| {
                    // Word (r / 8, g), nibble r % 8: the stream index in a row-major
                    // `[packed_rows, groups]` int32 matrix.
                    let word = (r / 8) * groups + g;
                    Self::nibble(z, word * 8 + r % 8)
                });
                let v = Self::nibble(q, r * cols + c);
                out.push(round_bf16((v - z) * s[r * groups + g]));
            }
        }
        Ok(out)
    }

    /// NVFP4 (`nvfp4-pack-quantized`): `weight_packed` `[rows, cols/2]` uint8 (even element in
    /// the low nibble), `weight_scale` `[rows, cols/16]` E4M3, `weight_global_scale` G;
    /// `fp4·(s/G)` in bf16.
    fn nvfp4(&self, name: &str, rows: usize, cols: usize) -> Result<Vec<f32>> {
        let q = self.bytes(&format!("{name}.weight_packed"), Dtype::U8, rows * cols / 2)?;
        let s = self.floats(&format!("{name}.weight_scale"), rows * cols / 16)?;
        let g = self.floats(&format!("{name}.weight_global_scale"), 1)?[0];
        Ok((0..rows * cols)
            .map(|i| round_bf16(e2m1(code(q, i)) * (s[i / 16] / g)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3_bytes_decode_to_their_values() {
        assert_eq!(e4m3(0x00), 0.0);
        assert_eq!(e4m3(0x38), 1.0);
        assert_eq!(e4m3(0x7e), 448.0);
        assert_eq!(e4m3(0xfe), -448.0);
        assert_eq!(e4m3(0x01), 2f32.powi(-9));
        assert!(e4m3(0x7f).is_nan());
    }

    #[test]
    fn e2m1_codes_decode_to_the_fp4_grid() {
        let all: Vec<f32> = (0..16).map(e2m1).collect();
        assert_eq!(
            all,
            [
                0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0,
                -6.0
            ]
        );
    }
}
