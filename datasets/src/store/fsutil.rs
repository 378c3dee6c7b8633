//! Durable file operations: a write is only reported once it has reached the disk.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::error::{DatasetError, Result};

/// Replace `path` atomically: write a temporary sibling, fsync it, rename, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = File::create(&tmp).map_err(DatasetError::io(&tmp))?;
        f.write_all(bytes).map_err(DatasetError::io(&tmp))?;
        f.sync_all().map_err(DatasetError::io(&tmp))?;
    }
    fs::rename(&tmp, path).map_err(DatasetError::io(path))?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(DatasetError::io(dir))
}

pub fn sha256_file(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    let bytes = fs::read(path).map_err(DatasetError::io(path))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}
