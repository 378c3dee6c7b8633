//! Reading a dataset back, verifying schema version, checksums and every record.

use std::path::{Path, PathBuf};

use super::files::{list_shards, read_manifest, read_shard};
use super::{Checksums, MANIFEST, PROBES};
use crate::error::{DatasetError, Result};
use crate::manifest::Manifest;
use crate::probe::ProbeSet;
use crate::record::Record;

#[derive(Debug, Clone)]
pub struct Dataset {
    pub dir: PathBuf,
    pub manifest: Manifest,
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

    /// `hspi dataset verify`: every record read back and checked; a one-line summary.
    pub fn verify_all(&self) -> Result<String> {
        let records = self.records()?;
        Ok(format!(
            "ok: {} records, {} probes, {} platforms, schema {}",
            records.len(),
            self.probe_set()?.probes.len(),
            self.manifest.platforms.len(),
            self.manifest.schema_version
        ))
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
