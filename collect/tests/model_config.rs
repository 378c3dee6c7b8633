//! A real model's configuration read from its GGUF (the packaged SmolLM2-135M-Instruct file,
//! `.ci/setup` fetches it), as its model card gives it.

use candle_core::quantized::gguf_file;
use hspi_collect::zoo::model_config::ModelConfig;

#[test]
fn smollm2s_gguf_reads_as_its_model_card_says() {
    let path = hspi_collect::zoo::smollm2::weights_path(None).unwrap();
    let mut f = std::fs::File::open(&path).unwrap();
    let content = gguf_file::Content::read(&mut f).unwrap();
    let c = ModelConfig::from_gguf(&content, &path).unwrap();
    assert_eq!(
        (c.arch.as_str(), c.layers, c.hidden, c.heads, c.kv_heads),
        ("llama", 30, 576, 9, 3)
    );
    assert_eq!((c.intermediate, c.vocab, c.head_dim()), (1536, 49152, 64));
}

/// Only the models a registry packages have default weights; any other name needs its own.
#[test]
fn fetched_weights_are_the_default_only_for_fetchable_models() {
    let smollm2 = hspi_collect::zoo::fetched_weights("smollm2")
        .unwrap()
        .unwrap();
    assert_eq!(
        smollm2,
        hspi_collect::zoo::smollm2::weights_path(None).unwrap()
    );
    assert!(hspi_collect::zoo::fetched_weights("my-llama").is_none());
    let missing = std::path::Path::new("/nonexistent/my-llama.gguf");
    let e = hspi_collect::zoo::weights_at(missing, "my-llama")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("pass --weights PATH") && !e.contains("hspi fetch"),
        "{e}"
    );
}
