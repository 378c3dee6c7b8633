//! A model's identity as datasets record it: its name, its weights' sha256 and task, and for a
//! language model read from weights its architecture family and its tokenizer's fingerprint
//! (what a pack's manifest records too), so two datasets of one name are told apart when their
//! vocabularies or architectures differ.

use hspi_datasets::ModelInfo;

use crate::zoo::codec::Codec;
use crate::zoo::model_config::ModelConfig;
use crate::zoo::Model;

/// `model`'s identity. The architecture and the tokenizer are read from the weights where they
/// can be; weights they cannot be read from fail at collection, with the reason, not here.
pub fn of(model: &Model) -> ModelInfo {
    let mut info = model.info();
    if let Model::Lm { path, .. } = model {
        info.architecture = ModelConfig::of_weights(path).ok().map(|c| c.arch);
        info.tokenizer_sha256 = Codec::for_weights(path)
            .ok()
            .and_then(|c| c.fingerprint().map(String::from));
    }
    info
}
