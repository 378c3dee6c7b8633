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
