//! bf16: the model's weights and activations in bf16, f32 accumulation (a bf16 GEMM on every
//! engine). The weights arrive rounded to bf16 already; the activations are the model's.

use hspi_datasets::NumericFormat;

use super::LinearScheme;

struct Bf16;

pub fn scheme(format: NumericFormat) -> Option<Box<dyn LinearScheme>> {
    (format == NumericFormat::Bf16).then(|| Box::new(Bf16) as Box<dyn LinearScheme>)
}

impl LinearScheme for Bf16 {
    fn format(&self) -> NumericFormat {
        NumericFormat::Bf16
    }

    fn weights(&self, _w: &mut [f32], _cols: usize) {}
}
