//! What this machine can run, per model and backend (`hspi platforms`): the CPU path, the GPUs
//! and their provenance, and every backend's platforms or why it has none.

use hspi_datasets::GpuInfo;
use serde_json::json;

use crate::backend::BACKENDS;
use crate::zoo::{smollm2, ModelId};

/// One backend's platforms for one model, or why it runs none here.
pub struct BackendListing {
    pub backend: &'static str,
    pub in_default_grid: bool,
    pub platforms: Listed,
}

pub enum Listed {
    Platforms(Vec<String>),
    /// Why the backend runs the model at no platform here.
    Unavailable(String),
}

pub struct ModelListing {
    pub model: ModelId,
    pub backends: Vec<BackendListing>,
}

impl ModelListing {
    /// The default grid's size: what `--platforms default` collects.
    fn default_count(&self) -> usize {
        self.backends
            .iter()
            .filter(|b| b.in_default_grid)
            .filter_map(|b| match &b.platforms {
                Listed::Platforms(list) => Some(list.len()),
                Listed::Unavailable(_) => None,
            })
            .sum()
    }
}

pub struct Listing {
    pub isa: &'static str,
    pub gpus: Vec<GpuInfo>,
    pub models: Vec<ModelListing>,
    pub lm_weights: Option<std::path::PathBuf>,
}

impl Listing {
    pub fn detect() -> Listing {
        let mut gpus = Vec::new();
        for backend in BACKENDS {
            gpus.extend(backend.gpus());
        }
        let models = ModelId::ALL
            .into_iter()
            .map(|model| ModelListing {
                model,
                backends: BACKENDS
                    .iter()
                    .map(|b| BackendListing {
                        backend: b.name(),
                        in_default_grid: b.in_default_grid(),
                        platforms: match b.platforms(model) {
                            Ok(list) => {
                                Listed::Platforms(list.iter().map(ToString::to_string).collect())
                            }
                            Err(why) => Listed::Unavailable(why.to_string()),
                        },
                    })
                    .collect(),
            })
            .collect();
        Listing {
            isa: hspi_datasets::provenance::isa_path(),
            gpus,
            models,
            lm_weights: smollm2::weights_path(None).ok(),
        }
    }

    pub fn json(&self) -> serde_json::Value {
        let models: serde_json::Map<String, serde_json::Value> = self
            .models
            .iter()
            .map(|m| {
                let backends: serde_json::Map<String, serde_json::Value> = m
                    .backends
                    .iter()
                    .map(|b| {
                        let value = match &b.platforms {
                            Listed::Platforms(list) => {
                                json!({ "platforms": list, "default_grid": b.in_default_grid })
                            }
                            Listed::Unavailable(why) => json!({ "unavailable": why }),
                        };
                        (b.backend.to_string(), value)
                    })
                    .collect();
                (m.model.name().to_string(), json!({ "backends": backends }))
            })
            .collect();
        json!({
            "cpu_isa": self.isa,
            "gpus": self.gpus,
            "models": models,
            "smollm2_weights": self.lm_weights,
        })
    }

    pub fn text(&self) -> String {
        let mut out = format!("CPU path: cpu-{}\n", self.isa);
        if self.gpus.is_empty() {
            out.push_str("GPUs: none usable\n");
        }
        for gpu in &self.gpus {
            out.push_str(&format!("GPU: {gpu}\n"));
        }
        for m in &self.models {
            out.push_str(&format!(
                "\n{} ({} platforms in the default grid):\n",
                m.model.name(),
                m.default_count()
            ));
            for b in &m.backends {
                match &b.platforms {
                    Listed::Platforms(list) => {
                        out.push_str(&format!(
                            "  {} ({} platforms, --platforms {}):\n",
                            b.backend,
                            list.len(),
                            b.backend
                        ));
                        list.iter()
                            .for_each(|p| out.push_str(&format!("    {p}\n")));
                    }
                    Listed::Unavailable(why) => {
                        out.push_str(&format!("  {}: none here ({why})\n", b.backend))
                    }
                }
            }
            if m.model == ModelId::SmolLm2 && self.lm_weights.is_none() {
                out.push_str(&format!(
                    "  (weights not cached: run `{}`)\n",
                    smollm2::FETCH_COMMAND
                ));
            }
        }
        out
    }
}
