//! Sealing and checking a pack: every file's sha256 in the manifest, and the manifest's own hash
//! as the pack's id. A pack is opened only after every byte checks out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::PackError;
use crate::manifest::{
    PackManifest, PromptTokens, CLASSIFIER, MANIFEST, POOL, PROMPT_TOKENS, REFERENCES, REPEATS,
    SCHEMA,
};

/// A pack whose files all match its manifest.
#[derive(Debug, Clone)]
pub struct Pack {
    pub dir: PathBuf,
    pub manifest: PackManifest,
}

fn sha256_file(path: &Path) -> Result<String, PackError> {
    Ok(hspi_datasets::store::sha256_file(path)?)
}

/// Every file under `dir` but the manifest, as `/`-separated relative paths, sorted.
fn files_under(dir: &Path) -> Result<Vec<String>, PackError> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), PackError> {
        for entry in std::fs::read_dir(dir).map_err(PackError::io(dir))? {
            let entry = entry.map_err(PackError::io(dir))?;
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out)?;
            } else {
                let rel = path.strip_prefix(root).expect("under the root");
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(rel.join("/"));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.retain(|f| f != MANIFEST);
    out.sort();
    Ok(out)
}

/// The content address of a manifest: sha256 of its JSON with `id` empty (the file table is in
/// it, so the id covers every file).
fn content_id(manifest: &PackManifest) -> String {
    let mut m = manifest.clone();
    m.id = String::new();
    let json = serde_json::to_vec(&m).expect("a manifest always serialises");
    hex::encode(Sha256::digest(&json))
}

/// The dataset directories under `dir/sub` (references/ or repeats/), sorted; none if absent.
/// Also read while a pack is being built, before it is sealed.
pub fn dataset_dirs(dir: &Path, sub: &str) -> Result<Vec<PathBuf>, PackError> {
    let root = dir.join(sub);
    if !root.exists() {
        return Ok(Vec::new());
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .map_err(PackError::io(&root))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Hash every file in `dir`, stamp the manifest with the table and its id, and write pack.json.
pub fn seal(dir: &Path, mut manifest: PackManifest) -> Result<Pack, PackError> {
    let mut files = BTreeMap::new();
    for rel in files_under(dir)? {
        files.insert(rel.clone(), sha256_file(&dir.join(&rel))?);
    }
    manifest.files = files;
    manifest.schema = SCHEMA;
    manifest.id = content_id(&manifest);
    let path = dir.join(MANIFEST);
    let json = serde_json::to_string_pretty(&manifest).expect("a manifest always serialises");
    std::fs::write(&path, json + "\n").map_err(PackError::io(&path))?;
    Ok(Pack {
        dir: dir.to_path_buf(),
        manifest,
    })
}

impl Pack {
    /// The manifest alone, unchecked (for listing).
    pub fn read_manifest(dir: &Path) -> Result<PackManifest, PackError> {
        let path = dir.join(MANIFEST);
        if !path.exists() {
            return Err(PackError::NotAPack {
                path: dir.to_path_buf(),
            });
        }
        let text = std::fs::read_to_string(&path).map_err(PackError::io(&path))?;
        let manifest: PackManifest =
            serde_json::from_str(&text).map_err(|e| PackError::Malformed {
                path: path.clone(),
                what: "pack manifest",
                reason: e.to_string(),
            })?;
        if manifest.schema != SCHEMA {
            return Err(PackError::Schema {
                path,
                found: manifest.schema,
                supported: SCHEMA,
            });
        }
        Ok(manifest)
    }

    /// Open the pack at `dir`, checking every file against the manifest and the manifest
    /// against its id.
    pub fn open(dir: &Path) -> Result<Pack, PackError> {
        let manifest = Pack::read_manifest(dir)?;
        let pack = dir.to_path_buf();
        let actual = content_id(&manifest);
        if actual != manifest.id {
            return Err(PackError::ManifestAltered {
                pack,
                expected: manifest.id.clone(),
                actual,
            });
        }
        let present = files_under(dir)?;
        if let Some(extra) = present.iter().find(|f| !manifest.files.contains_key(*f)) {
            return Err(PackError::Unlisted {
                pack,
                file: extra.clone(),
            });
        }
        for (file, expected) in &manifest.files {
            let path = dir.join(file);
            if !path.exists() {
                return Err(PackError::Missing {
                    pack,
                    file: file.clone(),
                });
            }
            let actual = sha256_file(&path)?;
            if &actual != expected {
                return Err(PackError::Altered {
                    pack,
                    file: file.clone(),
                    expected: expected.clone(),
                    actual,
                });
            }
        }
        Ok(Pack {
            dir: dir.to_path_buf(),
            manifest,
        })
    }

    /// The short form of the id shown to users.
    pub fn short_id(&self) -> &str {
        &self.manifest.id[..12.min(self.manifest.id.len())]
    }

    pub fn pool_path(&self) -> PathBuf {
        self.dir.join(POOL)
    }

    pub fn classifier_path(&self) -> PathBuf {
        self.dir.join(CLASSIFIER)
    }

    /// The reference datasets, one directory each.
    pub fn reference_dirs(&self) -> Result<Vec<PathBuf>, PackError> {
        dataset_dirs(&self.dir, REFERENCES)
    }

    /// The repeated answers (determinism flags), one directory each.
    pub fn repeat_dirs(&self) -> Result<Vec<PathBuf>, PackError> {
        dataset_dirs(&self.dir, REPEATS)
    }

    /// The billing counts (None when the pack has none).
    pub fn prompt_tokens(&self) -> Result<Option<PromptTokens>, PackError> {
        let path = self.dir.join(PROMPT_TOKENS);
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(PackError::io(&path))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| PackError::Malformed {
                path,
                what: "prompt token counts",
                reason: e.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{PackModel, PoolInfo};

    fn manifest() -> PackManifest {
        PackManifest {
            schema: SCHEMA,
            id: String::new(),
            name: "m-e".into(),
            model: PackModel {
                id: "m".into(),
                aliases: vec![],
                weights_sha256: None,
                tokenizer_sha256: None,
                architecture: None,
            },
            engine: "e".into(),
            hspi_version: "0".into(),
            created_unix: 0,
            pool: PoolInfo {
                probes: 0,
                hash: String::new(),
                max_tokens: 8,
                top_logprobs: 5,
            },
            platforms: vec![],
            provenance: vec![],
            files: BTreeMap::new(),
        }
    }

    #[test]
    fn one_altered_byte_anywhere_is_refused_naming_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("references/a")).unwrap();
        std::fs::write(d.join("references/a/records.jsonl"), b"abc\n").unwrap();
        std::fs::write(d.join(POOL), b"{}").unwrap();
        let sealed = seal(d, manifest()).unwrap();
        assert_eq!(Pack::open(d).unwrap().manifest, sealed.manifest);

        std::fs::write(d.join("references/a/records.jsonl"), b"abd\n").unwrap();
        let err = Pack::open(d).unwrap_err().to_string();
        assert!(err.contains("references/a/records.jsonl"), "{err}");
        std::fs::write(d.join("references/a/records.jsonl"), b"abc\n").unwrap();

        std::fs::write(d.join("extra.json"), b"{}").unwrap();
        let err = Pack::open(d).unwrap_err().to_string();
        assert!(
            err.contains("extra.json") && err.contains("not listed"),
            "{err}"
        );
        std::fs::remove_file(d.join("extra.json")).unwrap();

        let text = std::fs::read_to_string(d.join(MANIFEST)).unwrap();
        std::fs::write(
            d.join(MANIFEST),
            text.replace("\"engine\": \"e\"", "\"engine\": \"f\""),
        )
        .unwrap();
        let err = Pack::open(d).unwrap_err().to_string();
        assert!(err.contains("pack.json was altered"), "{err}");
    }
}
