//! Merge shard datasets (one per node of an atlas collection) into one: same schema, probe set
//! and model, no record twice, every shard's sessions (and so its host provenance) kept. With
//! `replace`, a later shard's platforms take the place of those platforms' records in earlier
//! shards: one format of a reference set computed again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::DatasetError;
use crate::manifest::{unix_now, Manifest};
use crate::store::{Dataset, DatasetWriter};
use crate::{short_id, Session};

pub struct MergeSummary {
    pub shards: usize,
    pub records: usize,
    pub platforms: usize,
    /// Records of earlier shards a later shard's platforms replaced.
    pub replaced: usize,
}

impl MergeSummary {
    /// One line for `hspi dataset merge`.
    pub fn describe(&self, out: &Path) -> String {
        let replaced = match self.replaced {
            0 => String::new(),
            n => format!(" ({n} records of earlier shards replaced)"),
        };
        format!(
            "merged {} shards: {} records from {} platforms into {}{replaced}",
            self.shards,
            self.records,
            self.platforms,
            out.display()
        )
    }
}

fn refuse(shard: &Path, reason: String) -> DatasetError {
    DatasetError::Merge {
        shard: shard.into(),
        reason,
    }
}

pub fn merge(
    shards: &[PathBuf],
    out: &Path,
    session: Session,
    replace: bool,
) -> Result<MergeSummary, DatasetError> {
    let first = shards
        .first()
        .ok_or_else(|| refuse(out, "no shard datasets given".into()))?;
    let base = Dataset::open(first)?;
    let probes = base.probe_set()?;
    let mut manifest: Manifest = base.manifest.clone();
    manifest.platforms.clear();
    let mut sessions = Vec::new();
    let mut seen: HashMap<(String, String), PathBuf> = HashMap::new();
    let mut all = Vec::new();
    let mut replaced = 0;
    for shard in shards {
        let d = Dataset::open(shard)?;
        let m = &d.manifest;
        if m.schema_version != base.manifest.schema_version {
            return Err(refuse(
                shard,
                format!(
                    "schema version {} differs from {}'s {}",
                    m.schema_version,
                    first.display(),
                    base.manifest.schema_version
                ),
            ));
        }
        if m.probe_set.hash != base.manifest.probe_set.hash {
            return Err(refuse(
                shard,
                format!(
                "probe set {} differs from {}'s {}: shards of one collection share one probe set",
                short_id(&m.probe_set.hash),
                first.display(),
                short_id(&base.manifest.probe_set.hash)
            ),
            ));
        }
        if !m.model.same_model(&base.manifest.model) {
            return Err(refuse(
                shard,
                format!(
                    "model {} (weights {}) differs from {}'s {} (weights {})",
                    m.model.id,
                    short_id(&m.model.weights_sha256),
                    first.display(),
                    base.manifest.model.id,
                    short_id(&base.manifest.model.weights_sha256)
                ),
            ));
        }
        if replace {
            let labels: Vec<String> = m.platforms.iter().map(ToString::to_string).collect();
            let mut dropped = std::collections::HashSet::new();
            all.retain(|r: &crate::Record| {
                let drop = labels.contains(&r.platform_key());
                if drop {
                    dropped.insert((r.target.clone(), r.probe_id.clone()));
                }
                !drop
            });
            seen.retain(|key, _| !dropped.contains(key));
            replaced += dropped.len();
        }
        for p in &m.platforms {
            if !manifest.platforms.contains(p) {
                manifest.platforms.push(p.clone());
            }
        }
        sessions.extend(m.sessions.iter().cloned());
        for r in d.records()? {
            let key = (r.target.clone(), r.probe_id.clone());
            if let Some(other) = seen.get(&key) {
                return Err(refuse(shard, format!(
                    "holds {} on probe {} again (already in {}): a record may come from one shard only",
                    r.target,
                    r.probe_id,
                    other.display()
                )));
            }
            seen.insert(key, shard.clone());
            all.push(r);
        }
    }
    sessions.push(session);
    manifest.created_unix = unix_now();
    let mut writer = DatasetWriter::create_with_sessions(out, &manifest, &probes, sessions)?;
    // Appends are fsynced batches; a few thousand records per batch keeps that cheap.
    for chunk in all.chunks(4096) {
        writer.append(chunk)?;
    }
    writer.finish()?;
    Ok(MergeSummary {
        shards: shards.len(),
        records: all.len(),
        platforms: manifest.platforms.len(),
        replaced,
    })
}
