//! The served path's weights read alike from a model's two stores: each tiny model `.ci/tiny-models`
//! writes (a safetensors checkpoint and its GGUF conversion by llama.cpp's own converter) gives
//! the same configuration, matrices, biases, norms and rotary frequencies either way — llama's
//! rows un-permuted from llama.cpp's rotary layout, gemma's norms back from the converter's
//! `1 + w`, Llama 3's frequencies from `rope_freqs` as from `rope_scaling` — and a mixture of
//! experts is refused by name.

use std::path::PathBuf;

use hspi_collect::zoo::decoder_weights::{self, DecoderWeights};

fn tiny(arch: &str) -> PathBuf {
    let cache = std::env::var_os("HSPI_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/hspi"));
    let dir = cache.join("tiny-models").join(arch);
    assert!(
        dir.join("hf/model.safetensors").exists(),
        "{} is missing: run .ci/setup (.ci/tiny-models)",
        dir.display()
    );
    dir
}

/// The largest difference between two vectors of one length, relative to the largest value.
fn gap(what: &str, a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let scale = a.iter().map(|v| v.abs()).fold(1e-30, f32::max);
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / scale)
        .fold(0.0, f32::max)
}

/// Every vector of both, by name.
fn vectors(w: &DecoderWeights) -> Vec<(String, Vec<f32>)> {
    let mut out = vec![
        ("embeddings".to_string(), w.embed.clone()),
        ("final norm".to_string(), w.final_norm.clone()),
    ];
    for (l, layer) in w.layers.iter().enumerate() {
        for (name, m, _, _) in layer.linears(&w.config) {
            out.push((format!("{l} {name}"), m.clone()));
        }
        out.push((format!("{l} input norm"), layer.attn_norm.clone()));
        out.push((format!("{l} MLP norm"), layer.ffn_norm.clone()));
        let extra = [
            ("bias", layer.qkv_bias.as_ref().map(|b| b.to_vec())),
            ("q/k norm", layer.qk_norm.as_ref().map(|n| n.to_vec())),
            ("post norm", layer.post_norms.as_ref().map(|n| n.to_vec())),
        ];
        for (name, group) in extra {
            for (i, v) in group.into_iter().flatten().enumerate() {
                out.push((format!("{l} {name} {i}"), v));
            }
        }
    }
    out
}

#[test]
fn each_dense_familys_checkpoint_and_gguf_give_the_same_weights() {
    for arch in [
        "llama",
        "qwen2",
        "qwen3",
        "gemma3",
        "llama-h32",
        "qwen3-h32",
    ] {
        let dir = tiny(arch);
        let hf = decoder_weights::load(&dir.join("hf")).unwrap();
        let gguf = decoder_weights::load(&dir.join(format!("{arch}-F32.gguf"))).unwrap();
        let (mut a, mut b) = (hf.config.clone(), gguf.config.clone());
        // The file names the family as it is known there (`gemma3_text`, `gemma3`).
        a.arch.clear();
        b.arch.clear();
        assert_eq!(a, b, "{arch}: configurations");
        let (x, y) = (vectors(&hf), vectors(&gguf));
        assert_eq!(x.len(), y.len(), "{arch}: what each holds");
        for ((name, u), (_, v)) in x.iter().zip(&y) {
            // f32 throughout; gemma's norms went through the converter's `1 + w` and back.
            let g = gap(name, u, v);
            assert!(g < 1e-6, "{arch} {name}: {g}");
        }
        match (&hf.rope_inv_freq, &gguf.rope_inv_freq) {
            (None, None) => assert_ne!(arch, "llama", "llama's rotary scaling was not read"),
            (Some(u), Some(v)) => {
                let g = gap("rotary frequencies", u, v);
                assert!(g < 1e-6, "{arch} rotary frequencies: {g}");
            }
            _ => panic!("{arch}: rotary scaling read from one store only"),
        }
    }
}

#[test]
fn a_mixture_of_experts_is_refused_by_the_served_path_by_name() {
    let dir = tiny("qwen3moe");
    for path in [dir.join("hf"), dir.join("qwen3moe-F32.gguf")] {
        let e = decoder_weights::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("mixture of experts") && e.contains("llama.cpp's formats"),
            "{}: {e}",
            path.display()
        );
    }
}
