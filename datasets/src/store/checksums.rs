//! `checksums.sha256` in the format of `sha256sum`, so `sha256sum -c` checks a dataset without hspi.

use std::collections::BTreeMap;
use std::path::Path;

use super::fsutil::{sha256_file, write_atomic};
use super::CHECKSUMS;
use crate::error::{DatasetError, Result};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checksums {
    /// Path relative to the dataset directory → lowercase hex sha256.
    pub entries: BTreeMap<String, String>,
}

impl Checksums {
    pub fn load(dir: &Path) -> Result<Checksums> {
        let path = dir.join(CHECKSUMS);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Checksums::default()),
            Err(e) => return Err(DatasetError::Io { path, source: e }),
        };
        let mut entries = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let Some((hash, file)) = line.split_once("  ") else {
                return Err(DatasetError::Malformed {
                    path: path.clone(),
                    what: "checksums file",
                    reason: format!("line {}: expected '<sha256>  <file>'", n + 1),
                });
            };
            entries.insert(file.to_string(), hash.to_string());
        }
        Ok(Checksums { entries })
    }

    pub fn save(&self, dir: &Path) -> Result<()> {
        let text: String = self
            .entries
            .iter()
            .map(|(file, hash)| format!("{hash}  {file}\n"))
            .collect();
        write_atomic(&dir.join(CHECKSUMS), text.as_bytes())
    }

    pub fn record(&mut self, dir: &Path, rel: &str) -> Result<()> {
        let hash = sha256_file(&dir.join(rel))?;
        self.entries.insert(rel.to_string(), hash);
        Ok(())
    }

    /// Record the hash of bytes just written to `rel`, without reading them back.
    pub fn record_bytes(&mut self, rel: &str, bytes: &[u8]) {
        use sha2::{Digest, Sha256};
        self.entries
            .insert(rel.to_string(), hex::encode(Sha256::digest(bytes)));
    }

    pub fn is_sealed(&self, rel: &str) -> bool {
        self.entries.contains_key(rel)
    }

    /// Check one file against its recorded hash.
    pub fn verify(&self, dir: &Path, rel: &str) -> Result<()> {
        let Some(expected) = self.entries.get(rel) else {
            return Ok(());
        };
        let actual = sha256_file(&dir.join(rel))?;
        if &actual != expected {
            return Err(DatasetError::Checksum {
                file: dir.join(rel),
                expected: expected.clone(),
                actual,
            });
        }
        Ok(())
    }
}
