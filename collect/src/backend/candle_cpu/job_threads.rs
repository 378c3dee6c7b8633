//! candle splits each quantised product over its barrier pool (a thread per core beside the
//! caller), whose threads spin between products. hspi's references already run one job per core
//! (a format of an answer each, `teacher_forced::on_workers`): a pool beside them only spins
//! against them. Measured on two cores, 16 fresh SmolLM2 answers at six formats (f32, f16, q8_0,
//! q4_0, q6_k, q4_k_m): 35.1 s with the pool, 30.3 s without; q4_k_m alone 11.7 s and 10.6 s;
//! the same bits (the pool splits a product by its outputs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// The variable candle reads once, when its pool is first used, for the pool's size.
const POOL_THREADS: &str = "CANDLE_NUM_THREADS";

/// Size candle's pool to its caller alone for this process, unless the user sized it. Called
/// before hspi's workers start, so before candle's first quantised product.
pub fn jobs_own_the_cores() {
    static SIZED: Once = Once::new();
    SIZED.call_once(|| {
        if std::env::var_os(POOL_THREADS).is_none() {
            // std serialises its own environment reads and writes; candle reads it through std.
            std::env::set_var(POOL_THREADS, "1");
        }
    });
    JOBS_OWN_THE_CORES.store(true, Ordering::Relaxed);
}

/// Set once hspi's own jobs hold the cores.
static JOBS_OWN_THE_CORES: AtomicBool = AtomicBool::new(false);

/// Threads one of hspi's own products may split over (`float_product`, the unpacked kernels):
/// every core, or the caller's alone once hspi's jobs hold the cores. The split never changes a
/// product's bits (each output is one worker's).
pub fn product_threads() -> usize {
    if JOBS_OWN_THE_CORES.load(Ordering::Relaxed) {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// A product's `rows` outputs for every one of `positions`, split by output row over `workers`
/// threads (each taking a multiple of `align` rows): `rows_of(range)` gives rows `range`, row by
/// row (`[range, positions]`); the product is laid out `[positions, rows]`. Each output is one
/// worker's, so the split never changes its bits.
pub fn by_output_rows(
    rows: usize,
    positions: usize,
    workers: usize,
    align: usize,
    rows_of: impl Fn(std::ops::Range<usize>) -> Vec<f32> + Sync,
) -> Vec<f32> {
    let per = rows.div_ceil(workers.max(1)).div_ceil(align).max(1) * align;
    let mut parts: Vec<Vec<f32>> = vec![Vec::new(); rows.div_ceil(per)];
    if parts.len() == 1 {
        parts[0] = rows_of(0..rows);
    } else {
        std::thread::scope(|scope| {
            for (i, part) in parts.iter_mut().enumerate() {
                let rows_of = &rows_of;
                scope.spawn(move || *part = rows_of(i * per..((i + 1) * per).min(rows)));
            }
        });
    }
    let mut out = vec![0f32; positions * rows];
    for (i, part) in parts.iter().enumerate() {
        for (r, row) in part.chunks(positions.max(1)).enumerate() {
            for (p, v) in row.iter().enumerate() {
                out[p * rows + i * per + r] = *v;
            }
        }
    }
    out
}
