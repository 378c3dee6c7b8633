//! Reading a dataset back, verifying schema version, checksums and every record.

use std::path::{Path, PathBuf};

use super::writer::{list_shards, read_shard};
use super::{Checksums, MANIFEST, PROBES};
use crate::error::{DatasetError, Result};
use crate::manifest::{Manifest, SCHEMA_VERSION};
use crate::probe::ProbeSet;
use crate::record::Record;

#[derive(Debug, Clone)]
pub struct Dataset {
    pub dir: PathBuf,
    pub manifest: Manifest,
}

pub(crate) fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join(MANIFEST);
    if !path.exists() {
        return Err(DatasetError::NotADataset { path: dir.into() });
    }
    let text = std::fs::read_to_string(&path).map_err(DatasetError::io(&path))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| DatasetError::Malformed {
            path: path.clone(),
            what: "manifest",
            reason: e.to_string(),
        })?;
    let found = value
        .get("schema_version")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| DatasetError::Malformed {
            path: path.clone(),
            what: "manifest",
            reason: "no schema_version".into(),
        })? as u32;
    if found != SCHEMA_VERSION {
        return Err(DatasetError::SchemaVersion {
            path,
            found,
            supported: SCHEMA_VERSION,
        });
    }
    serde_json::from_value(value).map_err(|e| DatasetError::Malformed {
        path,
        what: "manifest",
        reason: e.to_string(),
    })
}

impl Dataset {
    pub fn open(dir: impl AsRef<Path>) -> Result<Dataset> {
        let dir = dir.as_ref();
        let manifest = read_manifest(dir)?;
        Checksums::load(dir)?.verify(dir, MANIFEST)?;
        Ok(Dataset {
            dir: dir.into(),
            manifest,
        })
    }

    pub fn probe_set(&self) -> Result<ProbeSet> {
        let path = self.dir.join(PROBES);
        Checksums::load(&self.dir)?.verify(&self.dir, PROBES)?;
        let bytes = std::fs::read(&path).map_err(DatasetError::io(&path))?;
        serde_json::from_slice(&bytes).map_err(|e| DatasetError::Malformed {
            path,
            what: "probe set",
            reason: e.to_string(),
        })
    }

    /// Every record of every shard, verified. A sealed shard whose hash is off is searched for the
    /// record at fault; an unsealed shard (an interrupted collection) is refused.
    pub fn records(&self) -> Result<Vec<Record>> {
        let checksums = Checksums::load(&self.dir)?;
        let mut out = Vec::new();
        for (_, rel) in list_shards(&self.dir)? {
            if !checksums.is_sealed(&rel) {
                return Err(DatasetError::CorruptRecord {
                    shard: self.dir.join(&rel),
                    record: 0,
                    reason: "shard is not sealed: its collection was interrupted\nhint: rerun the same `hspi collect` with --resume".into(),
                });
            }
            // Decoding first names the record at fault; the hash then catches removed lines.
            let records = read_shard(&self.dir, &rel)?;
            checksums.verify(&self.dir, &rel)?;
            out.extend(records);
        }
        Ok(out)
    }
}
