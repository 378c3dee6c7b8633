//! INT4 W4A16 in AWQ/GPTQ's layout, round to nearest (what llm-compressor's W4A16 recipe makes
//! without calibration data; AWQ and GPTQ add calibrated scaling on top): per `group` weights
//! along the reduction, `s = (max − min)/15` with 0 in the range, `z = clamp(rne(−8 − min/s), −8, 7)`,
//! `q = clamp(rne(w/s + z), −8, 7)`, each step in bf16 as compressed-tensors computes it (checked
//! against its checkpoints), dequantised in the kernel to `(q − z)·s` in the activation dtype;
//! bf16 activations, f32 accumulation.

use hspi_datasets::NumericFormat;

use super::{per_row, round_bf16, LinearScheme};

struct Int4W4a16 {
    group: usize,
}

pub fn scheme(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    match format {
        NumericFormat::Int4W4a16 { group } => Some(Box::new(Int4W4a16 {
            group: group as usize,
        })),
        _ => None,
    }
}

impl LinearScheme for Int4W4a16 {
    fn format(&self) -> NumericFormat {
        NumericFormat::Int4W4a16 {
            group: self.group as u32,
        }
    }

    fn fits(&self, cols: usize) -> bool {
        self.group > 0 && cols.is_multiple_of(self.group)
    }

    fn weights(&self, w: &mut [f32], cols: usize) {
        per_row(w, cols, |row| {
            for g in row.chunks_mut(self.group.max(1)) {
                let lo = g.iter().copied().fold(0f32, f32::min);
                let hi = g.iter().copied().fold(0f32, f32::max);
                let scale = round_bf16(round_bf16(hi - lo) / 15.0);
                if scale == 0.0 {
                    continue;
                }
                let zero = round_bf16(-8.0 - round_bf16(lo / scale))
                    .round_ties_even()
                    .clamp(-8.0, 7.0);
                for v in g.iter_mut() {
                    let q = round_bf16(round_bf16(*v / scale) + zero)
                        .round_ties_even()
                        .clamp(-8.0, 7.0);
                    *v = round_bf16((q - zero) * scale);
                }
            }
        });
    }
}
