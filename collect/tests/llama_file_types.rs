//! hspi requantises a GGUF as `llama-quantize` does: for each file type .ci/setup makes with
//! llama.cpp's own tool (Q8_0, Q4_0 and the K-quant mixes Q6_K, Q5_K_M, Q4_K_M of SmolLM2), every
//! matrix gets the type the file holds (`llama_tensor_type`: the tied head at Q8_0, `attn_v` and
//! `ffn_down` at Q6_K in the layers llama.cpp favours, rows of 576 at the 32-block fallbacks) and
//! the very bytes (ggml's K-quant quantisers ported; candle's own differ). Needs `.ci/setup`.

use candle_core::quantized::gguf_file;
use candle_core::Device;
use hspi_collect::backend::candle_cpu::{
    llama_file_format, llama_quantize, llama_tensor_type, Role,
};
use hspi_datasets::NumericFormat;

fn open(path: &std::path::Path) -> (gguf_file::Content, std::fs::File) {
    let mut f = std::fs::File::open(path)
        .unwrap_or_else(|e| panic!("{}: {e} (run .ci/setup)", path.display()));
    let c = gguf_file::Content::read(&mut f).unwrap();
    (c, f)
}

#[test]
fn every_matrix_of_llama_cpps_files_is_requantised_to_its_type_and_bytes() {
    let dir = hspi_collect::zoo::cache_dir().join("smollm2");
    let (src, mut sf) = open(&dir.join("SmolLM2-135M-Instruct.Q4_1.gguf"));
    assert_eq!(
        llama_file_format(&src),
        Some("q4_1".parse().unwrap()),
        "the packaged file"
    );
    let layers = 30;
    for (file, format) in [
        ("Q8_0", "q8_0"),
        ("Q4_0", "q4_0"),
        ("Q6_K", "q6_k"),
        ("Q5_K_M", "q5_k_m"),
        ("Q4_K_M", "q4_k_m"),
    ] {
        let format: NumericFormat = format.parse().unwrap();
        let (dst, mut df) = open(&dir.join(format!("quants/smollm2-{file}.gguf")));
        // The file says what it is (a file of the very format loads as it is).
        assert_eq!(llama_file_format(&dst), Some(format), "{file}");
        let mut names: Vec<&String> = dst.tensor_infos.keys().collect();
        names.sort();
        let mut checked = 0;
        for name in names {
            let info = &dst.tensor_infos[name];
            if info.shape.rank() != 2 {
                continue;
            }
            // SmolLM2's head is tied to its embeddings.
            let role = match name.split('.').collect::<Vec<_>>()[..] {
                ["token_embd", "weight"] => Role::Output,
                ["blk", layer, matrix, "weight"] => Role::Block {
                    matrix,
                    layer: layer.parse().unwrap(),
                    layers,
                },
                _ => panic!("{file}: unexpected matrix {name}"),
            };
            let columns = *info.shape.dims().last().unwrap();
            let dtype = llama_tensor_type(format, role, columns).unwrap();
            assert_eq!(dtype, info.ggml_dtype, "{file}: {name}");
            let source = src
                .tensor(&mut sf, name, &Device::Cpu)
                .unwrap()
                .dequantize(&Device::Cpu)
                .unwrap();
            let ours = llama_quantize(&source, dtype).unwrap();
            let theirs = dst.tensor(&mut df, name, &Device::Cpu).unwrap();
            assert!(
                ours.data().unwrap() == theirs.data().unwrap(),
                "{file}: {name} ({dtype:?}) requantised to other bytes than llama-quantize's"
            );
            checked += 1;
        }
        assert_eq!(checked, 211, "{file}");
    }
}
