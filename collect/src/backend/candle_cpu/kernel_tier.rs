//! One tier of candle's x86 kernels on every CPU. candle 0.11 picks the kernels it multiplies
//! quantised matrices with by what the CPU has (`repack_x86::level`: AVX-512 VNNI, AVX-VNNI,
//! AMX, AVX2): on a VNNI CPU a Q8_0 matrix whose width is a multiple of 256 is multiplied against
//! activations rounded per 256 values (Q8_K), not per 32 as llama.cpp rounds them, and Q4_K and
//! Q6_K matrices go through other tiles. A reference's bits would depend on the auditor's CPU,
//! and SmolLM2's Q8_0 would be further from llama-server's
//! (`tests/architectures.rs::smollm2_answers_as_llama_cpp_computes_it`). hspi pins candle's AVX2
//! tier (its `MISTRALRS_FORCE_AVX2`, read once, at the first quantised product) before it loads
//! a quantised matrix: llama.cpp's rounding, the same bits on every CPU with AVX2 and FMA.

use std::sync::Once;

/// The variable candle 0.11 reads (once) to keep its AVX2 kernels on a VNNI or AMX CPU.
const FORCE_AVX2: &str = "MISTRALRS_FORCE_AVX2";

/// Pin candle's AVX2 tier for this process. Called wherever hspi loads a quantised matrix, so
/// it runs before candle's first quantised product reads the variable.
pub fn pin() {
    static PIN: Once = Once::new();
    PIN.call_once(|| {
        if std::env::var(FORCE_AVX2).as_deref() != Ok("1") {
            // std serialises its own environment reads and writes; candle reads it through std.
            std::env::set_var(FORCE_AVX2, "1");
        }
    });
}
