//! The append-only, durable dataset writer.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::files::{list_shards, read_manifest, read_shard};
use super::fsutil::{sync_dir, write_atomic};
use super::line::{decode_line, encode_line};
use super::{shard_name, Checksums, MANIFEST, PROBES, RECORDS_DIR};
use crate::error::{DatasetError, Result};
use crate::manifest::{Manifest, Session};
use crate::probe::ProbeSet;
use crate::record::Record;
use crate::short_id;

/// Rotate to a new shard past this many records, so no shard grows without bound.
const SHARD_RECORDS: usize = 20_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Refuse an existing directory.
    Create,
    /// Delete an existing directory first.
    Force,
    /// Continue an existing collection (or start one where none was acknowledged yet).
    Resume,
}

impl OpenMode {
    /// `--resume` wins over `--force`; neither: create.
    pub fn from_flags(resume: bool, force: bool) -> OpenMode {
        match (resume, force) {
            (true, _) => OpenMode::Resume,
            (_, true) => OpenMode::Force,
            _ => OpenMode::Create,
        }
    }
}

pub struct DatasetWriter {
    dir: PathBuf,
    /// A new dataset's probes.json and manifest, written on their own thread while the first
    /// answers are computed; joined before the first record is appended.
    header: Option<std::thread::JoinHandle<Result<Checksums>>>,
    checksums: Checksums,
    shard_rel: String,
    shard: File,
    shard_records: usize,
    /// sha256 of the open shard's bytes so far: sealing needs no read-back.
    shard_hash: sha2::Sha256,
    next_shard: u32,
    done: HashSet<(String, String)>,
}

impl DatasetWriter {
    /// Open `dir` for collection. `manifest` describes what this run collects; on resume it must
    /// agree with the stored one (model, weights, probe set, platforms) and `session` is appended.
    pub fn open(
        dir: &Path,
        manifest: &Manifest,
        probes: &ProbeSet,
        session: Session,
        mode: OpenMode,
    ) -> Result<DatasetWriter> {
        let has_manifest = dir.join(MANIFEST).exists();
        match mode {
            OpenMode::Resume if has_manifest => Self::resume(dir, manifest, session),
            OpenMode::Resume => {
                // A run killed before its manifest reached the disk acknowledged nothing.
                if dir.exists() && has_records(dir)? {
                    return Err(DatasetError::NotADataset { path: dir.into() });
                }
                Self::create(dir, manifest, probes, vec![session], true)
            }
            OpenMode::Create => Self::create(dir, manifest, probes, vec![session], false),
            OpenMode::Force => Self::create(dir, manifest, probes, vec![session], true),
        }
    }

    /// A new dataset whose manifest keeps the given sessions (a merge keeps every shard's).
    pub fn create_with_sessions(
        dir: &Path,
        manifest: &Manifest,
        probes: &ProbeSet,
        sessions: Vec<Session>,
    ) -> Result<DatasetWriter> {
        Self::create(dir, manifest, probes, sessions, false)
    }

    fn create(
        dir: &Path,
        manifest: &Manifest,
        probes: &ProbeSet,
        sessions: Vec<Session>,
        replace: bool,
    ) -> Result<DatasetWriter> {
        if dir.exists() {
            let empty = fs::read_dir(dir)
                .map_err(DatasetError::io(dir))?
                .next()
                .is_none();
            if !empty && !replace {
                return Err(DatasetError::AlreadyExists { path: dir.into() });
            }
            if !empty {
                fs::remove_dir_all(dir).map_err(DatasetError::io(dir))?;
            }
        }
        let records = dir.join(RECORDS_DIR);
        fs::create_dir_all(&records).map_err(DatasetError::io(&records))?;
        let mut manifest = manifest.clone();
        manifest.sessions = sessions;
        let (header_dir, probes) = (dir.to_path_buf(), probes.clone());
        let header = std::thread::spawn(move || -> Result<Checksums> {
            let dir = header_dir.as_path();
            let probes_json = serde_json::to_vec(&probes).expect("probe sets serialise");
            write_atomic(&dir.join(PROBES), &probes_json)?;
            let mut checksums = Checksums::default();
            checksums.record_bytes(PROBES, &probes_json);
            // The manifest goes last: its presence marks a dataset that can be resumed.
            write_manifest(dir, &manifest, &mut checksums)?;
            Ok(checksums)
        });
        let mut writer = Self::with_new_shard(dir, Checksums::default(), HashSet::new(), 0)?;
        writer.header = Some(header);
        Ok(writer)
    }

    /// Wait for a new dataset's probes.json and manifest to be on disk.
    fn header_written(&mut self) -> Result<()> {
        if let Some(header) = self.header.take() {
            self.checksums = header.join().expect("writing the header does not panic")?;
        }
        Ok(())
    }

    fn resume(dir: &Path, expected: &Manifest, session: Session) -> Result<DatasetWriter> {
        let mut manifest = read_manifest(dir)?;
        let mismatch = |reason: String| DatasetError::ResumeMismatch {
            path: dir.into(),
            reason,
        };
        if !manifest.model.same_model(&expected.model) {
            return Err(mismatch(format!(
                "the dataset holds model {} (weights {}), this run collects {} (weights {})",
                manifest.model.id,
                short_id(&manifest.model.weights_sha256),
                expected.model.id,
                short_id(&expected.model.weights_sha256)
            )));
        }
        if manifest.probe_set.hash != expected.probe_set.hash {
            return Err(mismatch(format!(
                "the dataset's probe set is {} ({} probes), this run's is {} ({} probes)",
                short_id(&manifest.probe_set.hash),
                manifest.probe_set.count,
                short_id(&expected.probe_set.hash),
                expected.probe_set.count
            )));
        }
        let stored: HashSet<_> = manifest.platforms.iter().collect();
        let wanted: HashSet<_> = expected.platforms.iter().collect();
        if stored != wanted {
            return Err(mismatch(format!(
                "the dataset's platforms ({}) differ from this run's ({})",
                manifest.platforms.len(),
                expected.platforms.len()
            )));
        }
        let mut checksums = Checksums::load(dir)?;
        let mut done = HashSet::new();
        let mut max_index = None;
        for (index, rel) in list_shards(dir)? {
            max_index = max_index.max(Some(index));
            if checksums.is_sealed(&rel) {
                checksums.verify(dir, &rel)?;
                for r in read_shard(dir, &rel)? {
                    done.insert((r.target, r.probe_id));
                }
            } else if repair_shard(dir, &rel, &mut done)? {
                checksums.record(dir, &rel)?;
            }
        }
        manifest.sessions.push(session);
        write_manifest(dir, &manifest, &mut checksums)?;
        Self::with_new_shard(dir, checksums, done, max_index.map_or(0, |i| i + 1))
    }

    fn with_new_shard(
        dir: &Path,
        checksums: Checksums,
        done: HashSet<(String, String)>,
        index: u32,
    ) -> Result<DatasetWriter> {
        let shard_rel = shard_name(index);
        let path = dir.join(&shard_rel);
        let shard = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(DatasetError::io(&path))?;
        sync_dir(&dir.join(RECORDS_DIR))?;
        Ok(DatasetWriter {
            dir: dir.into(),
            header: None,
            checksums,
            shard_rel,
            shard,
            shard_records: 0,
            shard_hash: sha2::Sha256::default(),
            next_shard: index + 1,
            done,
        })
    }

    /// Whether the record for this target and probe is already on disk.
    pub fn is_done(&self, target: &str, probe_id: &str) -> bool {
        self.done
            .contains(&(target.to_string(), probe_id.to_string()))
    }

    pub fn done_count(&self) -> usize {
        self.done.len()
    }

    /// Append records and fsync: when this returns Ok, every record is acknowledged (on disk).
    pub fn append(&mut self, records: &[Record]) -> Result<()> {
        // No record before the manifest: a dataset without one is not resumable.
        self.header_written()?;
        let mut batch = String::new();
        let mut keys = Vec::with_capacity(records.len());
        for r in records {
            let key = (r.target.clone(), r.probe_id.clone());
            if self.done.contains(&key) || keys.contains(&key) {
                return Err(DatasetError::Duplicate {
                    probe: r.probe_id.clone(),
                    platform: r.target.clone(),
                });
            }
            keys.push(key);
            batch.push_str(&encode_line(r));
        }
        let path = self.dir.join(&self.shard_rel);
        self.shard
            .write_all(batch.as_bytes())
            .and_then(|_| self.shard.sync_data())
            .map_err(DatasetError::io(&path))?;
        sha2::Digest::update(&mut self.shard_hash, batch.as_bytes());
        self.done.extend(keys);
        self.shard_records += records.len();
        if self.shard_records >= SHARD_RECORDS {
            self.rotate()?;
        }
        Ok(())
    }

    fn rotate(&mut self) -> Result<()> {
        self.seal_current()?;
        let next = Self::with_new_shard(
            &self.dir,
            self.checksums.clone(),
            std::mem::take(&mut self.done),
            self.next_shard,
        )?;
        *self = next;
        Ok(())
    }

    fn seal_current(&mut self) -> Result<()> {
        self.header_written()?;
        let path = self.dir.join(&self.shard_rel);
        if self.shard_records == 0 {
            fs::remove_file(&path).map_err(DatasetError::io(&path))?;
        } else {
            let hash = sha2::Digest::finalize(self.shard_hash.clone());
            self.checksums
                .entries
                .insert(self.shard_rel.clone(), hex::encode(hash));
        }
        self.checksums.save(&self.dir)
    }

    /// Seal the open shard so readers can verify it.
    pub fn finish(mut self) -> Result<()> {
        self.seal_current()
    }
}

fn write_manifest(dir: &Path, manifest: &Manifest, checksums: &mut Checksums) -> Result<()> {
    let json = serde_json::to_vec_pretty(manifest).expect("manifests serialise");
    write_atomic(&dir.join(MANIFEST), &json)?;
    checksums.record(dir, MANIFEST)?;
    checksums.save(dir)
}

fn has_records(dir: &Path) -> Result<bool> {
    for (_, rel) in list_shards(dir)? {
        let len = fs::metadata(dir.join(&rel))
            .map_err(DatasetError::io(dir.join(&rel)))?
            .len();
        if len > 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Cut the torn tail of a shard left by a crash. Returns false when nothing remains (the file is
/// removed). A bad line before the tail is corruption, not a crash, and is reported.
fn repair_shard(dir: &Path, rel: &str, done: &mut HashSet<(String, String)>) -> Result<bool> {
    let path = dir.join(rel);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(DatasetError::io(&path))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(DatasetError::io(&path))?;
    let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
    let text = String::from_utf8_lossy(&bytes[..keep]).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let mut good = 0usize;
    for (n, line) in lines.iter().enumerate() {
        match decode_line::<Record>(line) {
            Ok(r) => {
                let key = (r.target, r.probe_id);
                if done.contains(&key) {
                    return Err(DatasetError::CorruptRecord {
                        shard: path,
                        record: n + 1,
                        reason: "duplicate of a record in an earlier shard".into(),
                    });
                }
                done.insert(key);
                good += line.len() + 1;
            }
            // A last line whose fsync never finished may be garbage; anything earlier may not.
            Err(_) if n + 1 == lines.len() => break,
            Err(reason) => {
                return Err(DatasetError::CorruptRecord {
                    shard: path,
                    record: n + 1,
                    reason: reason.to_string(),
                })
            }
        }
    }
    if good == 0 {
        drop(file);
        fs::remove_file(&path).map_err(DatasetError::io(&path))?;
        return Ok(false);
    }
    file.set_len(good as u64)
        .and_then(|_| file.seek(SeekFrom::End(0)).map(|_| ()))
        .and_then(|_| file.sync_all())
        .map_err(DatasetError::io(&path))?;
    Ok(true)
}
