//! The dataset directory:
//!
//! ```text
//! DIR/manifest.json            schema version, provenance, model, probe set, platforms, sessions
//! DIR/probes.json              the probe set the records answer
//! DIR/records/shard-NNNNNN.jsonl  one JSON record per line, each ending in its own check
//! DIR/checksums.sha256         `sha256sum -c` compatible: manifest, probes and every sealed shard
//! ```
//! Shards are append-only. A shard is sealed (its sha256 recorded) when its writer finishes; a shard
//! left unsealed by a crash is repaired by `--resume`: its torn last line, never acknowledged, is cut.

mod checksums;
mod files;
mod fsutil;
mod line;
mod many;
mod merge;
mod reader;
mod writer;

pub use checksums::Checksums;
pub use fsutil::sha256_file;
pub use line::{decode_line, encode_line, LineError};
pub use many::{load_one_model, load_same_probes, OneModel};
pub use merge::{merge, MergeSummary};
pub use reader::Dataset;
pub use writer::{DatasetWriter, OpenMode};

pub const MANIFEST: &str = "manifest.json";
pub const PROBES: &str = "probes.json";
pub const RECORDS_DIR: &str = "records";
pub const CHECKSUMS: &str = "checksums.sha256";

pub(crate) fn shard_name(index: u32) -> String {
    format!("{RECORDS_DIR}/shard-{index:06}.jsonl")
}

pub(crate) fn shard_index(file_name: &str) -> Option<u32> {
    file_name
        .strip_prefix("shard-")?
        .strip_suffix(".jsonl")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests;
