use std::path::Path;

use super::*;
use crate::error::DatasetError;
use crate::manifest::{Manifest, ModelInfo, ProbeSetInfo, Session, SCHEMA_VERSION};
use crate::probe::{Probe, ProbeInput, ProbeProvenance, ProbeSet};
use crate::provenance::HostProvenance;
use crate::record::{LogitBits, Outputs, Record};

fn probes(n: usize) -> ProbeSet {
    ProbeSet {
        generator: "test".into(),
        seed: 0,
        probes: (0..n)
            .map(|i| {
                Probe::new(
                    ProbeInput::Tokens {
                        ids: vec![i as u32],
                    },
                    ProbeProvenance {
                        generator: "test".into(),
                        seed: 0,
                        index: i as u64,
                    },
                )
            })
            .collect(),
    }
}

fn manifest(set: &ProbeSet) -> Manifest {
    Manifest {
        schema_version: SCHEMA_VERSION,
        created_unix: 0,
        model: ModelInfo::new("m", "00", "t"),
        probe_set: ProbeSetInfo {
            hash: set.hash(),
            count: set.probes.len(),
            generator: "test".into(),
            seed: 0,
        },
        platforms: vec!["cpu-avx2/candle/f32/bs1".parse().unwrap()],
        sessions: vec![],
    }
}

fn session() -> Session {
    Session {
        started_unix: 0,
        command: "test".into(),
        provenance: HostProvenance::detect(vec![]),
    }
}

fn record(probe: &Probe, v: f32) -> Record {
    Record {
        probe_id: probe.id.clone(),
        target: "local:m@cpu-avx2/candle/f32/bs1".into(),
        platform: Some("cpu-avx2/candle/f32/bs1".parse().unwrap()),
        outputs: Outputs::Logits {
            values: LogitBits::from_f32(&[v, -v]),
        },
        timing_us: 1,
        usage: None,
        served: None,
        asked_as: None,
    }
}

fn write(dir: &Path, set: &ProbeSet, range: std::ops::Range<usize>, mode: OpenMode) {
    let mut w = DatasetWriter::open(dir, &manifest(set), set, session(), mode).unwrap();
    for i in range {
        w.append(&[record(&set.probes[i], i as f32)]).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn write_then_read_back_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let set = probes(5);
    write(&dir, &set, 0..5, OpenMode::Create);
    let d = Dataset::open(&dir).unwrap();
    assert_eq!(d.records().unwrap().len(), 5);
    assert_eq!(d.probe_set().unwrap(), set);
    let sums = std::fs::read_to_string(dir.join(CHECKSUMS)).unwrap();
    assert!(sums.contains("  records/shard-000000.jsonl"), "{sums}");
}

#[test]
fn existing_directory_is_refused_without_resume_or_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let set = probes(2);
    write(&dir, &set, 0..2, OpenMode::Create);
    let e = DatasetWriter::open(&dir, &manifest(&set), &set, session(), OpenMode::Create)
        .err()
        .unwrap();
    assert!(matches!(e, DatasetError::AlreadyExists { .. }), "{e}");
    assert!(e.to_string().contains("--resume"));
    write(&dir, &set, 0..1, OpenMode::Force);
    assert_eq!(Dataset::open(&dir).unwrap().records().unwrap().len(), 1);
}

#[test]
fn resume_cuts_a_torn_tail_and_skips_done_work() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let set = probes(6);
    // A crash: three records acknowledged, a fourth half-written, the shard never sealed.
    let mut w =
        DatasetWriter::open(&dir, &manifest(&set), &set, session(), OpenMode::Create).unwrap();
    for i in 0..3 {
        w.append(&[record(&set.probes[i], i as f32)]).unwrap();
    }
    drop(w);
    let shard = dir.join("records/shard-000000.jsonl");
    let torn = line::encode_line(&record(&set.probes[3], 3.0));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&shard)
        .unwrap();
    std::io::Write::write_all(&mut f, &torn.as_bytes()[..torn.len() / 2]).unwrap();
    drop(f);
    assert!(
        Dataset::open(&dir).unwrap().records().is_err(),
        "unsealed shard refused"
    );

    let mut w =
        DatasetWriter::open(&dir, &manifest(&set), &set, session(), OpenMode::Resume).unwrap();
    assert_eq!(w.done_count(), 3);
    for (i, p) in set.probes.iter().enumerate() {
        if !w.is_done(&record(p, 0.0).target, &p.id) {
            w.append(&[record(p, i as f32)]).unwrap();
        }
    }
    w.finish().unwrap();
    let d = Dataset::open(&dir).unwrap();
    let mut got: Vec<_> = d
        .records()
        .unwrap()
        .into_iter()
        .map(|r| r.probe_id)
        .collect();
    got.sort();
    let mut want: Vec<_> = set.probes.iter().map(|p| p.id.clone()).collect();
    want.sort();
    assert_eq!(got, want, "nothing lost, nothing duplicated");
    assert_eq!(d.manifest.sessions.len(), 2);
}

#[test]
fn resume_refuses_another_probe_set() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    write(&dir, &probes(3), 0..3, OpenMode::Create);
    let other = probes(4);
    let e = DatasetWriter::open(&dir, &manifest(&other), &other, session(), OpenMode::Resume)
        .err()
        .unwrap();
    assert!(e.to_string().contains("probe set"), "{e}");
}

#[test]
fn duplicates_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let set = probes(2);
    let mut w = DatasetWriter::open(
        &tmp.path().join("d"),
        &manifest(&set),
        &set,
        session(),
        OpenMode::Create,
    )
    .unwrap();
    w.append(&[record(&set.probes[0], 1.0)]).unwrap();
    let e = w.append(&[record(&set.probes[0], 1.0)]).unwrap_err();
    assert!(matches!(e, DatasetError::Duplicate { .. }));
}

#[test]
fn a_changed_byte_names_the_shard_and_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let set = probes(4);
    write(&dir, &set, 0..4, OpenMode::Create);
    let shard = dir.join("records/shard-000000.jsonl");
    let text = std::fs::read_to_string(&shard).unwrap();
    let third = text.lines().take(2).map(|l| l.len() + 1).sum::<usize>();
    let mut bytes = text.into_bytes();
    let pos = third + 20;
    bytes[pos] = if bytes[pos] == b'a' { b'b' } else { b'a' };
    std::fs::write(&shard, bytes).unwrap();
    let e = Dataset::open(&dir)
        .unwrap()
        .records()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("shard-000000.jsonl") && e.contains("record 3"),
        "{e}"
    );
}

#[test]
fn a_removed_record_fails_the_checksum() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let set = probes(3);
    write(&dir, &set, 0..3, OpenMode::Create);
    let shard = dir.join("records/shard-000000.jsonl");
    let text = std::fs::read_to_string(&shard).unwrap();
    let kept: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&shard, kept).unwrap();
    let e = Dataset::open(&dir)
        .unwrap()
        .records()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sha256") && e.contains("shard-000000.jsonl"),
        "{e}"
    );
}

#[test]
fn another_schema_version_names_both_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let set = probes(1);
    write(&dir, &set, 0..1, OpenMode::Create);
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("\"schema_version\": 1", "\"schema_version\": 7"),
    )
    .unwrap();
    let e = Dataset::open(&dir).unwrap_err().to_string();
    assert!(
        e.contains("schema version 7") && e.contains("version 1"),
        "{e}"
    );
}

/// A shard holding a platform's records again is refused, unless `replace` lets the later
/// shard's records take their place: one format of a reference set computed again.
#[test]
fn merge_refuses_a_platform_twice_unless_the_later_shard_replaces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let set = probes(3);
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    write(&old, &set, 0..3, OpenMode::Create);
    let mut w =
        DatasetWriter::open(&new, &manifest(&set), &set, session(), OpenMode::Create).unwrap();
    w.append(&[record(&set.probes[1], 9.0)]).unwrap();
    w.finish().unwrap();
    let shards = [old, new];
    let e = merge(&shards, &tmp.path().join("refused"), session(), false)
        .err()
        .unwrap();
    assert!(e.to_string().contains("again"), "{e}");
    let out = tmp.path().join("merged");
    let m = merge(&shards, &out, session(), true).unwrap();
    assert_eq!((m.records, m.replaced), (1, 3));
    let records = Dataset::open(&out).unwrap().records().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0], record(&set.probes[1], 9.0));
}
