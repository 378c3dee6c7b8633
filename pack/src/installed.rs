//! Installed packs: kept under the cache directory (`CACHE/packs/NAME-ID`), never in a
//! repository; found by model name for `hspi audit --model M`.

use std::path::{Path, PathBuf};

use crate::content::Pack;
use crate::error::PackError;
use crate::manifest::PackManifest;

pub fn packs_dir(cache: &Path) -> PathBuf {
    cache.join("packs")
}

/// Copy the directory `from` to `to`, leaving out files `skip` names.
pub fn copy_tree(from: &Path, to: &Path, skip: &dyn Fn(&Path) -> bool) -> Result<(), PackError> {
    std::fs::create_dir_all(to).map_err(PackError::io(to))?;
    for entry in std::fs::read_dir(from).map_err(PackError::io(from))? {
        let entry = entry.map_err(PackError::io(from))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst, skip)?;
        } else if !skip(&src) {
            std::fs::copy(&src, &dst).map_err(PackError::io(&src))?;
        }
    }
    Ok(())
}

/// Check the pack at `from` and copy it into the cache; where it now lives. A pack already
/// installed (the same id) is checked and kept.
pub fn install(from: &Path, cache: &Path) -> Result<Pack, PackError> {
    let pack = Pack::open(from)?;
    let dest = packs_dir(cache).join(format!("{}-{}", pack.manifest.name, pack.short_id()));
    if dest.exists() {
        return Pack::open(&dest);
    }
    // Copied beside its place and renamed: a half-copied pack is never taken for installed.
    let partial = dest.with_extension("partial");
    let _ = std::fs::remove_dir_all(&partial);
    copy_tree(from, &partial, &|_| false)?;
    std::fs::rename(&partial, &dest).map_err(PackError::io(&dest))?;
    Pack::open(&dest)
}

/// Every pack directory under the cache, with its manifest or why it cannot be read.
pub fn installed(cache: &Path) -> Vec<(PathBuf, Result<PackManifest, PackError>)> {
    let root = packs_dir(cache);
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && p.extension().is_none_or(|e| e != "partial"))
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|d| {
            let m = Pack::read_manifest(&d);
            (d, m)
        })
        .collect()
}

/// The newest installed pack for `model`, checked.
pub fn find_installed(cache: &Path, model: &str) -> Result<Pack, PackError> {
    let all = installed(cache);
    let best = all
        .iter()
        .filter_map(|(d, m)| m.as_ref().ok().map(|m| (d, m)))
        .filter(|(_, m)| m.model.matches(model))
        .max_by_key(|(_, m)| m.created_unix);
    match best {
        Some((dir, _)) => Pack::open(dir),
        None => Err(PackError::NoneInstalled {
            model: model.to_string(),
            dir: packs_dir(cache),
            installed: all
                .iter()
                .filter_map(|(_, m)| m.as_ref().ok().map(|m| m.model.id.clone()))
                .collect(),
        }),
    }
}

/// `hspi pack list`: each installed pack's summary, or why it cannot be read.
pub fn listing(cache: &Path) -> String {
    let all = installed(cache);
    if all.is_empty() {
        return format!(
            "no packs installed under {}\nhint: `hspi pack install DIR` (the SmolLM2 pack ships in datasets/packs/)",
            packs_dir(cache).display()
        );
    }
    all.iter()
        .map(|(dir, m)| match m {
            Ok(m) => m.summary(dir),
            Err(e) => format!("{}: unreadable: {e}\n", dir.display()),
        })
        .collect()
}
