//! Several datasets read as one: over one probe set (EQCs compare the same probes), or of one
//! model over any probe sets (training and identification).

use std::path::{Path, PathBuf};

use super::Dataset;
use crate::error::{DatasetError, Result};
use crate::manifest::{Manifest, ModelInfo};
use crate::probe::ProbeSet;
use crate::record::Record;
use crate::short_id;

/// Every record of several datasets over one probe set, that probe set, and the first manifest.
pub fn load_same_probes(dirs: &[PathBuf]) -> Result<(Vec<Record>, ProbeSet, Manifest)> {
    let mut records = Vec::new();
    let mut first: Option<(&Path, Manifest, ProbeSet)> = None;
    for dir in dirs {
        let d = Dataset::open(dir)?;
        match &first {
            None => first = Some((dir, d.manifest.clone(), d.probe_set()?)),
            Some((f, m, _)) if m.probe_set.hash != d.manifest.probe_set.hash => {
                return Err(DatasetError::Incompatible {
                    reason: format!(
                        "{} and {} hold different probe sets ({} vs {}): EQCs compare the same probes",
                        f.display(),
                        dir.display(),
                        short_id(&m.probe_set.hash),
                        short_id(&d.manifest.probe_set.hash)
                    ),
                })
            }
            Some(_) => {}
        }
        records.extend(d.records()?);
    }
    let (_, manifest, probes) = first.ok_or(DatasetError::NoDatasets)?;
    Ok((records, probes, manifest))
}

/// Records of several datasets (any probe sets) of one model.
pub struct OneModel {
    pub records: Vec<Record>,
    pub model: ModelInfo,
    /// The first dataset's probe-set hash.
    pub probe_set_hash: String,
}

/// Refuses datasets of different models: one classifier describes one model.
pub fn load_one_model(dirs: &[PathBuf]) -> Result<OneModel> {
    let mut records = Vec::new();
    let mut first: Option<(&Path, ModelInfo, String)> = None;
    for dir in dirs {
        let d = Dataset::open(dir)?;
        let m = d.manifest.model.clone();
        match &first {
            None => first = Some((dir, m, d.manifest.probe_set.hash.clone())),
            Some((f, fm, _)) if fm.id != m.id || fm.weights_sha256 != m.weights_sha256 => {
                return Err(DatasetError::Incompatible {
                    reason: format!(
                        "{} holds model {} and {} holds model {}: one classifier describes one model",
                        f.display(),
                        fm.id,
                        dir.display(),
                        m.id
                    ),
                })
            }
            Some(_) => {}
        }
        records.extend(d.records()?);
    }
    let (_, model, probe_set_hash) = first.ok_or(DatasetError::NoDatasets)?;
    Ok(OneModel {
        records,
        model,
        probe_set_hash,
    })
}
