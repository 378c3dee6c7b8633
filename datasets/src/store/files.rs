//! Reading what a dataset directory holds on disk: the manifest, the shard list, one shard. Both
//! the reader and the writer (on resume) read through here.

use std::fs;
use std::path::Path;

use super::line::decode_line;
use super::{shard_index, shard_name, MANIFEST, RECORDS_DIR};
use crate::error::{DatasetError, Result};
use crate::manifest::{Manifest, SCHEMA_VERSION};
use crate::record::Record;

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

pub(crate) fn list_shards(dir: &Path) -> Result<Vec<(u32, String)>> {
    let records = dir.join(RECORDS_DIR);
    let mut out = Vec::new();
    let entries = match fs::read_dir(&records) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => {
            return Err(DatasetError::Io {
                path: records,
                source: e,
            })
        }
    };
    for entry in entries {
        let entry = entry.map_err(DatasetError::io(&records))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(i) = shard_index(&name) {
            out.push((i, shard_name(i)));
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn read_shard(dir: &Path, rel: &str) -> Result<Vec<Record>> {
    let path = dir.join(rel);
    let text = fs::read_to_string(&path).map_err(DatasetError::io(&path))?;
    text.lines()
        .enumerate()
        .map(|(n, line)| {
            decode_line::<Record>(line).map_err(|reason| DatasetError::CorruptRecord {
                shard: path.clone(),
                record: n + 1,
                reason: reason.to_string(),
            })
        })
        .collect()
}
