//! An answer generated token by token through hspi's served path (each request the last one
//! plus the token it chose, as an engine decodes) has, at every step, the bits of a fresh pass
//! over the whole context: the served path computes only the new positions of a context that
//! extends the last one it read.

use std::path::Path;

use hspi_collect::backend::candle_cpu::ServedLm;
use hspi_collect::zoo::decoder_weights;
use hspi_datasets::NumericFormat;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn decoding_step_by_step_gives_a_fresh_passs_bits() {
    let base = decoder_weights::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compressed-tensors/base"),
    )
    .unwrap();
    let tokens: [u32; 12] = [1, 17, 5, 90, 33, 2, 64, 8, 41, 12, 7, 3];
    for format in [
        "bf16",
        "fp8-w8a8",
        "int8-w8a8",
        "nvfp4-w4a4",
        "bf16+kv-fp8-e4m3",
    ] {
        let format: NumericFormat = format.parse().unwrap();
        let lm = ServedLm::new(&base, format).unwrap();
        for k in 2..=tokens.len() {
            let stepped = lm.next_token_logits(&tokens[..k]).unwrap();
            let fresh = lm.logits_from(&tokens[..k], k).unwrap().pop().unwrap();
            assert_eq!(bits(&stepped), bits(&fresh), "{format}: {k} tokens");
        }
        // Another context, shorter or not extending the last: computed afresh.
        for other in [&tokens[..4], &[9, 9, 9, 9, 9][..]] {
            let stepped = lm.next_token_logits(other).unwrap();
            let fresh = lm.logits_from(other, other.len()).unwrap().pop().unwrap();
            assert_eq!(bits(&stepped), bits(&fresh), "{format}: {other:?}");
        }
    }
}
