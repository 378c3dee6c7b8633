//! Published compressed-tensors checkpoints read as they are: llm-compressor's checkpoints of a
//! tiny llama (`fixtures/compressed-tensors`, made by `.ci/compressed-fixtures`) dequantise to
//! exactly the values hspi's own scheme computes from the unquantised weights, so hspi's
//! references for a format are the published checkpoint's numerics, and a calibrated checkpoint
//! (whose scales no round to nearest re-makes) is served from its own weights and scales.

use std::path::{Path, PathBuf};

use hspi_collect::scheme;
use hspi_collect::zoo::decoder_weights::{self, DecoderWeights};
use hspi_datasets::NumericFormat;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compressed-tensors")
        .join(name)
}

/// Every linear layer's values, layer by layer, with `(name, cols)`.
fn linears(w: &DecoderWeights) -> Vec<(String, Vec<f32>, usize)> {
    w.layers
        .iter()
        .enumerate()
        .flat_map(|(l, layer)| {
            layer
                .linears(&w.config)
                .map(|(name, v, _, cols)| (format!("layer {l} {name}"), v.clone(), cols))
        })
        .collect()
}

/// How many of the checkpoint's dequantised weights differ from hspi's scheme applied to the
/// unquantised checkpoint, of how many.
fn differences(dir: &str, format: NumericFormat) -> (usize, usize) {
    let base = decoder_weights::load(&fixture("base")).unwrap();
    let published = decoder_weights::load(&fixture(dir)).unwrap();
    assert_eq!(published.quantized, Some(format), "{dir}");
    assert_eq!(base.quantized, None);
    assert_eq!(
        published.embed, base.embed,
        "{dir}: embeddings are not quantised"
    );
    let scheme = scheme::for_format(format).unwrap();
    let mut ours = base.clone();
    for layer in &mut ours.layers {
        scheme::quantise_layer(layer, scheme.as_ref(), &base.config);
    }
    // A load that found no layer, or fewer than the base holds, compares nothing: fail it.
    let (ours, theirs) = (linears(&ours), linears(&published));
    assert!(
        !theirs.is_empty() && theirs.len() == linears(&base).len(),
        "{dir}: {} linear layers read, the base checkpoint has {}",
        theirs.len(),
        linears(&base).len()
    );
    assert!(
        theirs
            .iter()
            .zip(linears(&base))
            .any(|((_, p, _), (_, b, _))| *p != b),
        "{dir}: the published weights are the unquantised ones: its quantisation was not read"
    );
    let (mut differ, mut total) = (0, 0);
    for ((name, ours, _), (_, p, _)) in ours.into_iter().zip(theirs) {
        let n = ours.iter().zip(&p).filter(|(a, b)| a != b).count();
        if n > 0 {
            eprintln!("{dir} {name}: {n} of {} differ", p.len());
        }
        differ += n;
        total += p.len();
    }
    (differ, total)
}

#[test]
fn int8_w8a8_checkpoints_are_hspis_int8_w8a8() {
    assert_eq!(differences("w8a8", NumericFormat::Int8W8a8).0, 0);
}

#[test]
fn fp8_dynamic_checkpoints_are_hspis_fp8_w8a8() {
    assert_eq!(differences("fp8-dynamic", NumericFormat::Fp8W8a8).0, 0);
}

#[test]
fn nvfp4a16_checkpoints_are_hspis_nvfp4_a16() {
    assert_eq!(differences("nvfp4a16", NumericFormat::NvFp4A16).0, 0);
}

#[test]
fn w4a16_group_64_checkpoints_are_hspis_int4_w4a16_g64() {
    assert_eq!(
        differences("w4a16-g64", NumericFormat::Int4W4a16 { group: 64 }).0,
        0
    );
}

/// docs/troubleshooting.md: a published checkpoint asked for at another format is refused with
/// the reason, and served at its own format (or the unquantised checkpoint at any).
#[test]
fn a_checkpoint_is_served_at_its_own_format_only() {
    use hspi_collect::backend::candle_cpu::ServedLm;
    let published = decoder_weights::load(&fixture("w8a8")).unwrap();
    let e = ServedLm::new(&published, NumericFormat::Bf16)
        .err()
        .expect("a W8A8 checkpoint served at bf16")
        .to_string();
    assert!(
        e.contains(
            "the checkpoint's layers are stored in int8-w8a8: it is served at int8-w8a8 only"
        ),
        "{e}"
    );
    // The fixes: its own format, or the unquantised checkpoint.
    let own = ServedLm::new(&published, NumericFormat::Int8W8a8).unwrap();
    let logits = own.next_token_logits(&[1, 2, 3]).unwrap();
    assert!(!logits.is_empty() && logits.iter().all(|v| v.is_finite()));
    let base = decoder_weights::load(&fixture("base")).unwrap();
    ServedLm::new(&base, NumericFormat::Bf16).unwrap();
}
