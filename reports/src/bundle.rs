//! Evidence bundles: the files behind a finding (raw responses, probe set, datasets, report)
//! copied under `files/`, a manifest of their sha256 hashes, and an ed25519 signature over the
//! manifest. Verification names the first file whose bytes changed, or the manifest if the
//! signature fails.

use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const SCHEMA: &str = "hspi-bundle/1";

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    #[error("{0}")]
    Key(String),
    #[error("bundle {bundle}: {reason}")]
    Invalid { bundle: String, reason: String },
}

fn io(path: &Path, e: impl std::fmt::Display) -> BundleError {
    BundleError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Relative to the bundle directory, `/`-separated.
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: String,
    pub created_unix: u64,
    /// The signer's ed25519 public key (hex).
    pub public_key: String,
    pub files: Vec<Entry>,
}

/// A new signing key from the OS's randomness, as hex (secret) and its public key (hex).
pub fn generate_key() -> (String, String) {
    let mut seed = [0u8; 32];
    rand::fill(&mut seed);
    let key = SigningKey::from_bytes(&seed);
    (
        hex::encode(seed),
        hex::encode(key.verifying_key().to_bytes()),
    )
}

/// A new signing key written to `path` (owner-only, never over an existing file); returns the
/// public key.
pub fn write_new_key(path: &Path) -> Result<String, BundleError> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    if path.exists() {
        return Err(BundleError::Key(format!(
            "{} already exists: a key is never overwritten",
            path.display()
        )));
    }
    let (secret, public) = generate_key();
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    o.mode(0o600);
    let mut f = o.open(path).map_err(|e| io(path, e))?;
    f.write_all(secret.as_bytes()).map_err(|e| io(path, e))?;
    Ok(public)
}

/// The signing key from the file `key`, else from the environment variable `env`.
pub fn load_secret(key: Option<&Path>, env: &str) -> Result<SigningKey, BundleError> {
    let secret = match key {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| io(path, format!("reading the signing key: {e}")))?,
        None => std::env::var(env).map_err(|_| {
            BundleError::Key(format!(
                "no signing key: pass --key FILE or set {env}\nhint: hspi bundle keygen --out KEYFILE"
            ))
        })?,
    };
    parse_secret(&secret)
}

pub fn parse_secret(hex_key: &str) -> Result<SigningKey, BundleError> {
    let bytes = hex::decode(hex_key.trim())
        .map_err(|_| BundleError::Key("the signing key is not hex".into()))?;
    let seed: [u8; 32] = bytes
        .try_into()
        .map_err(|_| BundleError::Key("the signing key must be 32 bytes (64 hex digits)".into()))?;
    Ok(SigningKey::from_bytes(&seed))
}

fn parse_public(hex_key: &str) -> Result<VerifyingKey, BundleError> {
    let bytes: [u8; 32] = hex::decode(hex_key.trim())
        .map_err(|_| BundleError::Key("public key is not hex".into()))?
        .try_into()
        .map_err(|_| BundleError::Key("public key must be 32 bytes".into()))?;
    VerifyingKey::from_bytes(&bytes).map_err(|e| BundleError::Key(format!("public key: {e}")))
}

fn sha256_file(path: &Path) -> Result<(String, u64), BundleError> {
    let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
    Ok((hex::encode(Sha256::digest(&bytes)), bytes.len() as u64))
}

fn copy_into(src: &Path, dest: &Path, out: &mut Vec<PathBuf>) -> Result<(), BundleError> {
    let meta = std::fs::metadata(src).map_err(|e| io(src, e))?;
    if meta.is_dir() {
        std::fs::create_dir_all(dest).map_err(|e| io(dest, e))?;
        let mut entries: Vec<_> = std::fs::read_dir(src)
            .map_err(|e| io(src, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for e in entries {
            let name = e.file_name().unwrap_or_default().to_owned();
            copy_into(&e, &dest.join(name), out)?;
        }
    } else {
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        std::fs::copy(src, dest).map_err(|e| io(src, e))?;
        out.push(dest.to_path_buf());
    }
    Ok(())
}

fn relative(bundle: &Path, p: &Path) -> String {
    p.strip_prefix(bundle)
        .unwrap_or(p)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Copy `inputs` (files or directories) into `bundle/files/`, hash them and sign the manifest.
pub fn sign(
    bundle: &Path,
    inputs: &[PathBuf],
    key: &SigningKey,
    created_unix: u64,
) -> Result<Manifest, BundleError> {
    if bundle.exists() {
        return Err(io(bundle, "already exists (a bundle is written once)"));
    }
    let files_dir = bundle.join("files");
    let mut copied = Vec::new();
    for input in inputs {
        let name = input
            .file_name()
            .ok_or_else(|| io(input, "has no file name"))?;
        let dest = files_dir.join(name);
        if dest.exists() {
            return Err(io(input, "two inputs share this name"));
        }
        copy_into(input, &dest, &mut copied)?;
    }
    let mut files = Vec::new();
    for c in &copied {
        let (sha256, bytes) = sha256_file(c)?;
        files.push(Entry {
            path: relative(bundle, c),
            sha256,
            bytes,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let manifest = Manifest {
        schema: SCHEMA.into(),
        created_unix,
        public_key: hex::encode(key.verifying_key().to_bytes()),
        files,
    };
    let text = serde_json::to_vec_pretty(&manifest).map_err(|e| io(bundle, e))?;
    let signature = key.sign(&text);
    std::fs::write(bundle.join("manifest.json"), &text).map_err(|e| io(bundle, e))?;
    std::fs::write(
        bundle.join("manifest.sig"),
        hex::encode(signature.to_bytes()),
    )
    .map_err(|e| io(bundle, e))?;
    Ok(manifest)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), BundleError> {
    for e in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let p = e.map_err(|e| io(dir, e))?.path();
        if p.is_dir() {
            walk(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// Check the signature (against `expected_key` when given) and every file's hash; files added
/// after signing are refused too.
pub fn verify(bundle: &Path, expected_key: Option<&str>) -> Result<Manifest, BundleError> {
    let invalid = |reason: String| BundleError::Invalid {
        bundle: bundle.display().to_string(),
        reason,
    };
    let text = std::fs::read(bundle.join("manifest.json"))
        .map_err(|e| io(&bundle.join("manifest.json"), e))?;
    let sig_hex = std::fs::read_to_string(bundle.join("manifest.sig"))
        .map_err(|e| io(&bundle.join("manifest.sig"), e))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| invalid(format!("manifest.json is malformed ({e})")))?;
    if manifest.schema != SCHEMA {
        return Err(invalid(format!(
            "schema '{}' is not {SCHEMA}",
            manifest.schema
        )));
    }
    if let Some(k) = expected_key {
        if k.trim() != manifest.public_key {
            return Err(invalid(format!(
                "signed by key {} — not the expected {}",
                manifest.public_key,
                k.trim()
            )));
        }
    }
    let key = parse_public(&manifest.public_key).map_err(|e| invalid(e.to_string()))?;
    let sig_bytes: [u8; 64] = hex::decode(sig_hex.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| invalid("manifest.sig is not a 64-byte hex signature".into()))?;
    key.verify(&text, &Signature::from_bytes(&sig_bytes))
        .map_err(|_| {
            invalid("manifest.json does not match its signature (the manifest was altered)".into())
        })?;
    for entry in &manifest.files {
        let path = bundle.join(&entry.path);
        if !path.exists() {
            return Err(invalid(format!("{} is missing", entry.path)));
        }
        let (sha, bytes) = sha256_file(&path)?;
        if sha != entry.sha256 || bytes != entry.bytes {
            return Err(invalid(format!(
                "{} was altered (sha256 {} , signed {})",
                entry.path,
                &sha[..16],
                &entry.sha256[..16]
            )));
        }
    }
    let mut present = Vec::new();
    walk(&bundle.join("files"), &mut present)?;
    for p in present {
        let rel = relative(bundle, &p);
        if !manifest.files.iter().any(|e| e.path == rel) {
            return Err(invalid(format!(
                "{rel} is not in the signed manifest (added after signing)"
            )));
        }
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_changed_byte_names_its_file() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir_all(data.join("records")).unwrap();
        std::fs::write(data.join("records/a.jsonl"), b"{\"x\":1}\n").unwrap();
        std::fs::write(tmp.path().join("report.json"), b"{}").unwrap();
        let (secret, public) = generate_key();
        let key = parse_secret(&secret).unwrap();
        let b = tmp.path().join("bundle");
        sign(&b, &[data, tmp.path().join("report.json")], &key, 0).unwrap();
        assert_eq!(verify(&b, Some(&public)).unwrap().files.len(), 2);
        let f = b.join("files/data/records/a.jsonl");
        let mut bytes = std::fs::read(&f).unwrap();
        bytes[5] ^= 1;
        std::fs::write(&f, &bytes).unwrap();
        let e = verify(&b, None).unwrap_err().to_string();
        assert!(e.contains("files/data/records/a.jsonl was altered"), "{e}");
        bytes[5] ^= 1;
        std::fs::write(&f, &bytes).unwrap();
        let (_, other) = generate_key();
        assert!(verify(&b, Some(&other))
            .unwrap_err()
            .to_string()
            .contains("not the expected"));
        let m = b.join("manifest.json");
        let text = std::fs::read_to_string(&m)
            .unwrap()
            .replace("\"bytes\": 2", "\"bytes\": 3");
        std::fs::write(&m, text).unwrap();
        assert!(verify(&b, None)
            .unwrap_err()
            .to_string()
            .contains("signature"));
    }
}
