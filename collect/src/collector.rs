//! The collector: run every pending (target, probe) pair and append records durably. Each batch
//! is on disk before progress moves on, so a crash loses only work never acknowledged.

use std::time::Instant;

use hspi_datasets::{DatasetWriter, Platform, ProbeSet, Record, Served};

use crate::error::Result;
use crate::target::Target;

/// Records appended (and fsynced) together.
const APPEND_BATCH: usize = 512;
/// The most work a crash can lose: answers older than this are appended and synced.
const FLUSH_AFTER: std::time::Duration = std::time::Duration::from_millis(200);

pub trait Progress {
    fn start(&self, total: u64, done: u64);
    fn target(&self, id: &str);
    fn advance(&self, n: u64);
    fn finish(&self);
}

pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: u64, _: u64) {}
    fn target(&self, _: &str) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// A target not opened yet: opening may load a model, so it happens only if work remains.
pub struct PendingTarget<'a> {
    pub id: String,
    pub platform: Option<Platform>,
    pub open: Box<dyn Fn() -> Result<Box<dyn Target>> + 'a>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CollectSummary {
    pub written: usize,
    pub already_done: usize,
}

pub fn collect(
    writer: &mut DatasetWriter,
    targets: &[PendingTarget<'_>],
    probes: &ProbeSet,
    progress: &dyn Progress,
) -> Result<CollectSummary> {
    let total = (targets.len() * probes.probes.len()) as u64;
    let mut summary = CollectSummary::default();
    let pending: Vec<Vec<_>> = targets
        .iter()
        .map(|t| {
            probes
                .probes
                .iter()
                .filter(|p| !writer.is_done(&t.id, &p.id))
                .collect()
        })
        .collect();
    let remaining: usize = pending.iter().map(Vec::len).sum();
    summary.already_done = total as usize - remaining;
    progress.start(total, summary.already_done as u64);
    for (spec, todo) in targets.iter().zip(pending) {
        if todo.is_empty() {
            continue;
        }
        progress.target(&spec.id);
        let mut target = (spec.open)()?;
        let bs = target.batch_size().max(1);
        let mut records = Vec::with_capacity(APPEND_BATCH);
        let mut last_flush = Instant::now();
        let mut failure = None;
        for batch in todo.chunks(bs) {
            let started = Instant::now();
            let outputs = match target.answer(batch) {
                Ok(o) => o,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            let per_probe = started.elapsed().as_micros() as u64 / batch.len() as u64;
            for (probe, answer) in batch.iter().zip(outputs) {
                records.push(Record {
                    probe_id: probe.id.clone(),
                    target: spec.id.clone(),
                    platform: spec.platform.clone(),
                    outputs: answer.outputs,
                    timing_us: per_probe,
                    usage: answer.usage,
                    served: Served::from_answer(answer.served_model, answer.system_fingerprint),
                });
            }
            // Each append is fsynced: batch fast answers (fewer syncs), but never hold more
            // than FLUSH_AFTER of work unacknowledged.
            if records.len() >= APPEND_BATCH || last_flush.elapsed() >= FLUSH_AFTER {
                writer.append(&records)?;
                summary.written += records.len();
                progress.advance(records.len() as u64);
                records.clear();
                last_flush = Instant::now();
            }
        }
        // What was answered before a failure is kept: append first, then report.
        if !records.is_empty() {
            writer.append(&records)?;
            summary.written += records.len();
            progress.advance(records.len() as u64);
        }
        if let Some(e) = failure {
            progress.finish();
            return Err(e);
        }
    }
    progress.finish();
    Ok(summary)
}
