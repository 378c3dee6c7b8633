//! The journal: every raw response, appended and fsynced before it is parsed. A rerun with the same
//! requests replays from it and pays nothing; a crash loses at most an unacknowledged tail.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use hspi_datasets::store::{decode_line, encode_line};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::client::RawResponse;
use crate::error::{CollectError, Result};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// sha256 of the URL and the request body.
    pub key: String,
    pub url: String,
    pub request: String,
    pub response: RawResponse,
    pub at_unix: u64,
}

pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    /// Successful responses by key.
    replies: Mutex<HashMap<String, RawResponse>>,
}

pub fn request_key(url: &str, body: &str) -> String {
    let mut h = Sha256::new();
    h.update(url.as_bytes());
    h.update(b"\n");
    h.update(body.as_bytes());
    hex::encode(h.finalize())
}

impl Journal {
    /// Open (or create) the journal at `path`, cutting a torn last line left by a crash.
    pub fn open(path: &Path) -> Result<Journal> {
        let io = CollectError::io(path);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(CollectError::io(dir))?;
        }
        let text = match std::fs::read(path) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io(e)),
        };
        let mut replies = HashMap::new();
        let mut good = 0usize;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for (n, line) in lines.iter().enumerate() {
            match decode_line::<JournalEntry>(line) {
                Ok(e) if line.ends_with('\n') => {
                    if e.response.is_success() {
                        replies.insert(e.key, e.response);
                    }
                    good += line.len();
                }
                _ if n + 1 == lines.len() => break,
                Err(reason) => {
                    return Err(CollectError::Journal {
                        path: path.into(),
                        reason: format!("entry {} is corrupt: {reason}", n + 1),
                    })
                }
                Ok(_) => unreachable!("only the last line can lack its newline"),
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(CollectError::io(path))?;
        file.set_len(good as u64).map_err(CollectError::io(path))?;
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(CollectError::io(path))?;
        Ok(Journal {
            path: path.into(),
            file: Mutex::new(file),
            replies: Mutex::new(replies),
        })
    }

    pub fn replay(&self, key: &str) -> Option<RawResponse> {
        self.replies.lock().expect("journal lock").get(key).cloned()
    }

    pub fn len(&self) -> usize {
        self.replies.lock().expect("journal lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append and fsync; only then may the response be parsed and used.
    pub fn append(&self, entry: &JournalEntry) -> Result<()> {
        let line = encode_line(entry);
        {
            let mut f = self.file.lock().expect("journal lock");
            f.write_all(line.as_bytes())
                .and_then(|_| f.sync_data())
                .map_err(CollectError::io(&self.path))?;
        }
        if entry.response.is_success() {
            self.replies
                .lock()
                .expect("journal lock")
                .insert(entry.key.clone(), entry.response.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, status: u16) -> JournalEntry {
        JournalEntry {
            key: key.into(),
            url: "http://x".into(),
            request: "{}".into(),
            response: RawResponse {
                status,
                headers: vec![],
                body: "{\"a\":1}".into(),
                elapsed_ms: 1,
            },
            at_unix: 0,
        }
    }

    #[test]
    fn replays_successes_and_survives_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let j = Journal::open(&path).unwrap();
        j.append(&entry("a", 200)).unwrap();
        j.append(&entry("b", 429)).unwrap();
        drop(j);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"key\":\"c\",\"url\"").unwrap();
        drop(f);
        let j = Journal::open(&path).unwrap();
        assert!(j.replay("a").is_some());
        assert!(j.replay("b").is_none(), "failures are not replayed");
        j.append(&entry("d", 200)).unwrap();
        drop(j);
        let j = Journal::open(&path).unwrap();
        assert!(
            j.replay("d").is_some(),
            "the torn tail was cut before appending"
        );
        assert_eq!(j.len(), 2);
    }
}
