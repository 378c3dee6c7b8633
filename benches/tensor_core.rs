//! Speed of the emulated GPU kernels per GEMM against candle's f32 matmul on the same shapes:
//! the CNN's GEMMs as the H100 plans run them (conv2 at batch 8: 128×32×144) and a square
//! 256×256×256. Each kernel is timed over repeated runs (best of 5) on one thread.
//! `cargo bench --bench tensor_core`.

use std::time::Instant;

use candle_core::{Device, Tensor};
use hspi_collect::backend::emulated::{Arch, GpuDot};
use hspi_datasets::{KernelOptions, NumericFormat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn best_of<F: FnMut() -> f32>(runs: usize, mut f: F) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    // candle's CPU matmul on one thread, as hspi runs small image models.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", "1");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    println!("| GEMM m×n×k | kernel | time per GEMM | ns per multiply-add | × candle f32 |");
    println!("| --- | --- | --- | --- | --- |");
    for (m, n, k) in [(128usize, 32usize, 144usize), (8, 64, 128), (256, 256, 256)] {
        let a: Vec<f32> = (0..m * k).map(|_| rng.random_range(-1.0..1.0)).collect();
        let b: Vec<f32> = (0..n * k).map(|_| rng.random_range(-1.0..1.0)).collect();
        let macs = (m * n * k) as f64;
        let at = Tensor::from_slice(&a, (m, k), &Device::Cpu).unwrap();
        let bt = Tensor::from_slice(&b, (k, n), &Device::Cpu).unwrap();
        let candle = best_of(5, || {
            at.matmul(&bt)
                .unwrap()
                .sum_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap()
        });
        println!(
            "| {m}×{n}×{k} | candle f32 matmul | {:.1} µs | {:.2} | 1 |",
            candle * 1e6,
            candle * 1e9 / macs
        );
        for (format, kernel) in [
            (NumericFormat::F16, "acc-f32.tc16.sk1.fma"),
            (NumericFormat::Tf32, "acc-f32.tc8.sk2.fma"),
            (NumericFormat::F16, "acc-f16.tc16.sk1.fma"),
            (NumericFormat::F32, "acc-f32.ln16x4.sk1.fma"),
            (NumericFormat::F32, "acc-f32.seq.sk1.fma"),
        ] {
            let kernel: KernelOptions = kernel.parse().unwrap();
            let dot = GpuDot::new(Arch::Sm90, format, kernel).unwrap();
            let round = |v: &f32| match format {
                NumericFormat::F16 => half::f16::from_f32(*v).to_f32(),
                _ => dot.operand(*v),
            };
            let (a, b): (Vec<f32>, Vec<f32>) =
                (a.iter().map(round).collect(), b.iter().map(round).collect());
            let t = best_of(5, || {
                let mut sink = 0f32;
                for i in 0..m {
                    for j in 0..n {
                        sink += dot.dot(&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
                    }
                }
                sink
            });
            println!(
                "| {m}×{n}×{k} | emu-sm90 {format} {kernel} | {:.1} µs | {:.2} | {:.0} |",
                t * 1e6,
                t * 1e9 / macs,
                t / candle
            );
        }
    }
}
