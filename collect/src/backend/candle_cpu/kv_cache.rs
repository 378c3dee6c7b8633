//! A quantised KV cache as llama.cpp's CPU flash attention reads it (`-ctk/-ctv q8_0|q4_0 -fa
//! on`, `ggml_compute_forward_flash_attn_ext_f16_one_chunk`). Since its attention rotation
//! (llama.cpp PR 21038, in the 11434 build hspi serves), where a head is a multiple of 64 wide,
//! keys and queries are turned by an orthonormal Walsh–Hadamard transform over chunks of
//! `n_rot_k` (64, doubled while the head width allows) and values over chunks of 64, the
//! attention's output turned back (the transform is its own inverse): the cache's rounding then
//! falls on spread-out values. Each key and value row is written to the cache through the cache
//! type's `from_float` and read back from its blocks; each query row is converted to the key
//! type's dot-product type (q8_0 for both) before its dot products with the keys; the values are
//! dequantised to f32 and summed in f32. Rows are rounded in blocks of 32 along the head
//! dimension, so a head width that is no multiple of 32 is refused (the blocks would straddle
//! heads). Measured against llama-server (tests/kv_cache.rs): without the rotation the
//! references point nowhere near the server's answers.

use candle_core::Tensor;
use half::f16;
use hspi_datasets::KvCache;

use crate::error::{CollectError, Result};

/// Values per block of q8_0 and q4_0.
const BLOCK: usize = 32;

/// Why this engine does not compute a cache for a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KvRefused {
    #[error("hspi computes llama.cpp's q8_0 and q4_0 KV caches, not {0}")]
    NotComputed(KvCache),
    #[error("a {cache} KV cache rounds blocks of {BLOCK} values along each head, and this model's heads are {head_dim} wide")]
    HeadsSplitBlocks { cache: KvCache, head_dim: usize },
}

/// Where the rotation starts: heads a multiple of this wide are turned.
const ROTATION: usize = 64;

/// A cache format this engine rounds keys and values to, with llama.cpp's rotation where the
/// heads allow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvRounding {
    cache: KvCache,
    /// The chunks keys and queries are turned over, and values and the output (none: not
    /// turned).
    rotate_keys: Option<usize>,
    rotate_values: Option<usize>,
}

impl KvRounding {
    /// The rounding of `cache` for heads of `head_dim` values; an error naming why where this
    /// engine does not compute it.
    pub fn new(cache: KvCache, head_dim: usize) -> std::result::Result<KvRounding, KvRefused> {
        if !matches!(cache, KvCache::Q8_0 | KvCache::Q4_0) {
            return Err(KvRefused::NotComputed(cache));
        }
        if !head_dim.is_multiple_of(BLOCK) {
            return Err(KvRefused::HeadsSplitBlocks { cache, head_dim });
        }
        // `llama_kv_cache`'s `n_rot_k` and `n_rot_v`.
        let turned = head_dim.is_multiple_of(ROTATION);
        let mut keys = ROTATION;
        while head_dim.is_multiple_of(2 * keys) {
            keys *= 2;
        }
        Ok(KvRounding {
            cache,
            rotate_keys: turned.then_some(keys),
            rotate_values: turned.then_some(ROTATION),
        })
    }

    /// Keys as the cache holds them (`[.., head dim]`).
    pub fn keys(&self, t: &Tensor) -> Result<Tensor> {
        self.cached(t, self.rotate_keys)
    }

    /// Values as the cache holds them.
    pub fn values(&self, t: &Tensor) -> Result<Tensor> {
        self.cached(t, self.rotate_values)
    }

    /// Queries as their dot products with the cached keys read them: turned as the keys are,
    /// then q8_0 (the dot-product type of both cache types).
    pub fn queries(&self, t: &Tensor) -> Result<Tensor> {
        each_block(t, |x| {
            rotate(x, self.rotate_keys);
            x.chunks_mut(BLOCK).for_each(q8_0);
        })
    }

    /// The attention's output (`[.., head dim]`, of turned values) turned back.
    pub fn output(&self, t: &Tensor) -> Result<Tensor> {
        match self.rotate_values {
            Some(_) => each_block(t, |x| rotate(x, self.rotate_values)),
            None => Ok(t.clone()),
        }
    }

    fn cached(&self, t: &Tensor, rotation: Option<usize>) -> Result<Tensor> {
        let block: fn(&mut [f32]) = match self.cache {
            KvCache::Q8_0 => q8_0,
            KvCache::Q4_0 => q4_0,
            other => {
                return Err(CollectError::BadRequest(format!(
                    "no rounding for a {other} KV cache"
                )))
            }
        };
        each_block(t, |x| {
            rotate(x, rotation);
            x.chunks_mut(BLOCK).for_each(block);
        })
    }
}

/// `t`'s values (in order) changed by `f`.
fn each_block(t: &Tensor, f: impl FnOnce(&mut [f32])) -> Result<Tensor> {
    let mut x: Vec<f32> = t.flatten_all()?.to_vec1()?;
    f(&mut x);
    Ok(Tensor::from_vec(x, t.dims(), t.device())?)
}

/// ggml's CPU `fwht` over every chunk of `n` (where given): each value times 1/√n, then the
/// butterflies `(u + v, u − v)` at strides 1, 2, 4, … (the natural-order Sylvester matrix
/// `ggml_gen_hadamard` makes, in the order its SIMD passes take: the same bits).
fn rotate(x: &mut [f32], n: Option<usize>) {
    let Some(n) = n else { return };
    let scale = 1.0 / (n as f32).sqrt();
    for row in x.chunks_mut(n) {
        row.iter_mut().for_each(|v| *v *= scale);
        let mut len = 1;
        while len < n {
            for i in (0..n).step_by(2 * len) {
                for j in i..i + len {
                    let (u, v) = (row[j], row[j + len]);
                    row[j] = u + v;
                    row[j + len] = u - v;
                }
            }
            len *= 2;
        }
    }
}

/// ggml's x86 `quantize_row_q8_0` and back: d = amax/127 kept as f16, each value
/// `x·(127/amax)` rounded half to even (`_mm256_round_ps`), read back as level × d.
fn q8_0(b: &mut [f32]) {
    let amax = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = f16::from_f32(amax / 127.0).to_f32();
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    for v in b {
        *v = (*v * id).round_ties_even() * d;
    }
}

/// ggml's `quantize_row_q4_0_ref` and back: d = (the value of largest magnitude)/−8 kept as
/// f16, levels `min(15, trunc(x/d + 8.5))`, read back as (level − 8) × d.
fn q4_0(b: &mut [f32]) {
    let (mut amax, mut max) = (0f32, 0f32);
    for v in b.iter() {
        if amax < v.abs() {
            amax = v.abs();
            max = *v;
        }
    }
    let d = max / -8.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let dh = f16::from_f32(d).to_f32();
    for v in b {
        let level = ((*v * id + 8.5) as i8).min(15);
        *v = f32::from(level - 8) * dh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// `x` rounded as a cache of heads 32 wide (not turned) holds it.
    fn rounded(cache: KvCache, x: &[f32]) -> Vec<f32> {
        let t = Tensor::from_vec(x.to_vec(), (x.len() / 32, 32), &Device::Cpu).unwrap();
        let r = KvRounding::new(cache, 32).unwrap();
        r.keys(&t)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap()
    }

    #[test]
    fn the_rotation_is_llama_cpps_hadamard_and_its_own_inverse() {
        // The first row of the Sylvester matrix is all 1/√n; a unit vector's image is its column.
        let mut e = vec![0f32; 64];
        e[0] = 1.0;
        rotate(&mut e, Some(64));
        assert!(e.iter().all(|v| *v == 0.125), "{e:?}");
        let mut e = vec![0f32; 64];
        e[1] = 1.0;
        rotate(&mut e, Some(64));
        assert!(e
            .iter()
            .enumerate()
            .all(|(i, v)| *v == if i % 2 == 0 { 0.125 } else { -0.125 }));
        let x: Vec<f32> = (0..128)
            .map(|i| ((i * 29 % 53) as f32 - 26.0) / 9.0)
            .collect();
        let mut y = x.clone();
        rotate(&mut y, Some(64));
        rotate(&mut y, Some(64));
        let worst = x
            .iter()
            .zip(&y)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 1e-5, "{worst}");
        // n_rot_k doubles while the head allows (Gemma 3's 256: 256), n_rot_v stays 64; heads
        // 32 wide are rounded, not turned.
        let r = KvRounding::new(KvCache::Q8_0, 256).unwrap();
        assert_eq!((r.rotate_keys, r.rotate_values), (Some(256), Some(64)));
        let r = KvRounding::new(KvCache::Q8_0, 64).unwrap();
        assert_eq!((r.rotate_keys, r.rotate_values), (Some(64), Some(64)));
        let r = KvRounding::new(KvCache::Q4_0, 96).unwrap();
        assert_eq!((r.rotate_keys, r.rotate_values), (None, None));
    }

    #[test]
    fn each_block_keeps_its_largest_value_and_steps_of_its_own_scale() {
        let x: Vec<f32> = (0..64)
            .map(|i| ((i * 37 % 61) as f32 - 30.0) / 7.0)
            .collect();
        // q4_0's levels run −8…7: the value opposite the block's largest clips a whole step.
        for (cache, levels, reach) in [(KvCache::Q8_0, 127.0, 0.5), (KvCache::Q4_0, 8.0, 1.0)] {
            let y = rounded(cache, &x);
            for (bx, by) in x.chunks(32).zip(y.chunks(32)) {
                let amax = bx.iter().fold(0f32, |m, v| m.max(v.abs()));
                let step = amax / levels;
                for (a, b) in bx.iter().zip(by) {
                    assert!(
                        (a - b).abs() <= step * reach + 1e-3 * amax,
                        "{cache}: {a} → {b}"
                    );
                    let level = b / (amax / levels);
                    assert!(
                        (level - level.round()).abs() < 2e-3 * levels,
                        "{cache}: {b}"
                    );
                }
            }
            assert_ne!(y, x, "{cache} rounded nothing");
        }
        // q4_0's first value of the largest magnitude maps to level −8 exactly; an all-zero
        // block stays zero.
        let y = rounded(KvCache::Q4_0, &x);
        let amax = x[..32].iter().fold(0f32, |m, v| m.max(v.abs()));
        let i = x[..32].iter().position(|v| v.abs() == amax).unwrap();
        assert!(
            (y[i] - x[i]).abs() < 1e-3 * x[i].abs(),
            "{} → {}",
            x[i],
            y[i]
        );
        assert_eq!(rounded(KvCache::Q8_0, &[0.0; 32]), vec![0.0; 32]);
    }

    #[test]
    fn heads_that_split_a_block_and_caches_it_does_not_compute_are_refused_by_name() {
        let e = KvRounding::new(KvCache::Q8_0, 24).unwrap_err().to_string();
        assert!(e.contains("24 wide"), "{e}");
        let e = KvRounding::new(KvCache::Fp8E4m3, 64)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not fp8-e4m3"), "{e}");
    }
}
