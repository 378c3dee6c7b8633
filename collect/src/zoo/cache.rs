use std::path::PathBuf;

/// Where registry-packaged weights are cached: `$HSPI_CACHE`, else `$XDG_CACHE_HOME/hspi`, else
/// `~/.cache/hspi`. Never inside the repository.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HSPI_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("hspi");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
    PathBuf::from(home).join(".cache").join("hspi")
}
