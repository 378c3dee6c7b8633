//! The collector: run every pending (target, probe) pair and append records durably. Answers
//! are computed on the calling thread while a second thread encodes, appends and fsyncs them,
//! so disk work overlaps the model's. Progress moves only when a batch is on disk, so a crash
//! loses only work never acknowledged.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::time::Instant;

use hspi_datasets::{DatasetWriter, Platform, ProbeSet, Record};

use crate::error::{CollectError, Result};
use crate::target::Target;

/// Records appended (and fsynced) together.
const APPEND_BATCH: usize = 512;
/// The most work a crash can lose: answers older than this are handed to the appender.
const FLUSH_AFTER: std::time::Duration = std::time::Duration::from_millis(200);
/// Batches waiting for the appender at most; computing waits beyond that, which bounds both
/// memory and what a crash can lose.
const QUEUED_BATCHES: usize = 2;

pub trait Progress: Sync {
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
    let (computed, appended) = std::thread::scope(|scope| {
        let (queue, batches) = sync_channel::<Vec<Record>>(QUEUED_BATCHES);
        let appender = scope.spawn(move || -> Result<usize> {
            let mut written = 0;
            for batch in batches {
                writer.append(&batch)?;
                written += batch.len();
                progress.advance(batch.len() as u64);
            }
            Ok(written)
        });
        let computed = answer_all(targets, pending, &queue, progress);
        // Closing the queue lets the appender drain it: answers given before a failure are
        // still appended before the failure is reported.
        drop(queue);
        let appended = appender.join().expect("the appender does not panic");
        (computed, appended)
    });
    progress.finish();
    // A failed append explains a stopped computation (its queue closed), so it comes first.
    summary.written = appended?;
    match computed {
        Ok(()) => Ok(summary),
        Err(Stopped::Failed(e)) => Err(e),
        Err(Stopped::AppenderGone) => unreachable!("the appender stops early only on an error"),
    }
}

/// Why answering stopped early.
enum Stopped {
    Failed(CollectError),
    /// The queue closed: the appender failed, and `collect` reports its error.
    AppenderGone,
}

impl From<CollectError> for Stopped {
    fn from(e: CollectError) -> Stopped {
        Stopped::Failed(e)
    }
}

/// Open each target with work left and answer its probes, queueing records for the appender.
/// Returns early with the target's error, after queueing what it answered before it.
fn answer_all(
    targets: &[PendingTarget<'_>],
    pending: Vec<Vec<&hspi_datasets::Probe>>,
    queue: &SyncSender<Vec<Record>>,
    progress: &dyn Progress,
) -> std::result::Result<(), Stopped> {
    let appender_stopped = |_| Stopped::AppenderGone;
    for (spec, todo) in targets.iter().zip(pending) {
        if todo.is_empty() {
            continue;
        }
        progress.target(&spec.id);
        let mut target = (spec.open)()?;
        let per_call = target.batch_size().max(1) * target.batches_per_call().max(1);
        let mut records = Vec::with_capacity(APPEND_BATCH);
        let mut last_flush = Instant::now();
        for batch in todo.chunks(per_call) {
            let started = Instant::now();
            let outputs = match target.answer(batch) {
                Ok(o) => o,
                Err(e) => {
                    if !records.is_empty() {
                        queue.send(records).map_err(appender_stopped)?;
                    }
                    return Err(e.into());
                }
            };
            let per_probe = started.elapsed().as_micros() as u64 / batch.len() as u64;
            for (probe, answer) in batch.iter().zip(outputs) {
                records.push(answer.into_record(
                    &probe.id,
                    &spec.id,
                    spec.platform.clone(),
                    target.asked_as(),
                    per_probe,
                ));
            }
            // Batch fast answers (fewer fsyncs), but never hold more than FLUSH_AFTER of work.
            if records.len() >= APPEND_BATCH || last_flush.elapsed() >= FLUSH_AFTER {
                let full = std::mem::replace(&mut records, Vec::with_capacity(APPEND_BATCH));
                queue.send(full).map_err(appender_stopped)?;
                last_flush = Instant::now();
            }
        }
        if !records.is_empty() {
            queue.send(records).map_err(appender_stopped)?;
        }
    }
    Ok(())
}
