//! The CUDA backend on a real GPU: `cargo test -p hspi-collect --features cuda --test cuda`.
//! These tests need an NVIDIA GPU and its driver, cuBLAS and NVRTC libraries; CI machines have
//! none and do not build the `cuda` feature's tests. On a machine without a GPU they fail and
//! say so, rather than passing without having checked anything.
#![cfg(feature = "cuda")]

use hspi_collect::backend::{image_runner, named, Backend};
use hspi_collect::zoo::cnn_digits;
use hspi_collect::ModelId;
use hspi_datasets::{top_label, Accumulator, NumericFormat, Platform};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn cuda() -> &'static dyn Backend {
    named("cuda").expect("the cuda backend is registered")
}

fn platforms() -> Vec<Platform> {
    cuda().platforms(ModelId::CnnDigits).unwrap_or_else(|e| {
        panic!("these tests need an NVIDIA GPU with its driver, libcublas and libnvrtc on the library path: {e}")
    })
}

/// 8-bit images as the probes are: k/255.
fn images(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let len = cnn_digits::embedded().input_len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            (0..len)
                .map(|_| rng.random_range(0..=255u32) as f32 / 255.0)
                .collect()
        })
        .collect()
}

fn run(platform: &Platform, inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let model = cnn_digits::embedded();
    let backend = image_runner(platform, &model).unwrap_or_else(|e| panic!("{platform}: {e}"));
    let bs = platform.batch_size as usize;
    inputs
        .chunks(bs)
        .flat_map(|chunk| {
            let refs: Vec<&[f32]> = chunk.iter().map(Vec::as_slice).collect();
            backend.forward(&refs).unwrap()
        })
        .collect()
}

/// The CPU's f32 emulated kernel in f64: close to exact for this model.
fn reference(inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let cpu: Platform = format!(
        "cpu-{}/emu/f32/acc-f32.seq.sk1.fma/bs1",
        hspi_datasets::provenance::isa_path()
    )
    .parse()
    .unwrap();
    run(&cpu, inputs)
}

fn relative_error(out: &[Vec<f32>], reference: &[Vec<f32>]) -> f64 {
    let (mut diff, mut norm) = (0f64, 0f64);
    for (o, r) in out.iter().zip(reference) {
        for (a, b) in o.iter().zip(r) {
            diff += (*a as f64 - *b as f64).powi(2);
            norm += (*b as f64).powi(2);
        }
    }
    (diff / norm).sqrt()
}

/// Within `bound` relative error of the reference, and the same top label on `min_agree` inputs.
fn assert_close(
    platform: &Platform,
    got: &[Vec<f32>],
    want: &[Vec<f32>],
    bound: f64,
    min_agree: usize,
) {
    let err = relative_error(got, want);
    assert!(
        err < bound,
        "{platform}: relative error {err:e} ≥ {bound:e}"
    );
    let agree = got
        .iter()
        .zip(want)
        .filter(|(g, w)| top_label(g) == top_label(w))
        .count();
    assert!(
        agree >= min_agree,
        "{platform}: top label agrees on {agree}/{}",
        got.len()
    );
}

#[test]
fn the_gpu_reports_its_provenance() {
    let gpus = cuda().gpus();
    assert!(!gpus.is_empty(), "no GPU found");
    for gpu in gpus {
        assert!(!gpu.name.is_empty());
        assert!(gpu.compute_capability.0 >= 5, "{gpu:?}");
        assert!(gpu.sm_count > 0 && gpu.memory_bytes > 1 << 30, "{gpu:?}");
        assert_eq!(gpu.cublas_version.split('.').count(), 3, "{gpu:?}");
        assert!(gpu.driver_version.contains("CUDA"), "{gpu:?}");
        assert!(
            gpu.nvrtc_version.starts_with(|c: char| c.is_ascii_digit()),
            "{gpu:?}"
        );
    }
}

#[test]
fn every_cuda_platform_computes_the_model_within_its_precision() {
    let inputs = images(64, 1);
    let want = reference(&inputs);
    for platform in platforms() {
        let got = run(&platform, &inputs);
        assert_eq!(got.len(), inputs.len(), "{platform}");
        assert!(got.iter().flatten().all(|v| v.is_finite()), "{platform}");
        let bound = match (platform.format, platform.kernel.map(|k| k.accumulator)) {
            (NumericFormat::F32, _) => 1e-5,
            (NumericFormat::Tf32, _) => 5e-3,
            (NumericFormat::F16, Some(Accumulator::F16)) => 5e-2,
            (NumericFormat::F16, _) => 1e-2,
            _ => 5e-2,
        };
        assert_close(&platform, &got, &want, bound, 60);
    }
}

#[test]
fn a_platform_answers_the_same_input_with_the_same_bits() {
    let inputs = images(32, 2);
    for platform in platforms() {
        let bits = |out: Vec<Vec<f32>>| -> Vec<u32> {
            out.into_iter().flatten().map(f32::to_bits).collect()
        };
        assert_eq!(
            bits(run(&platform, &inputs)),
            bits(run(&platform, &inputs)),
            "{platform} is not deterministic"
        );
    }
}

/// The platform dimensions hspi claims for a GPU must change the bits: precision, the f16
/// accumulator and (at f32) the batch size.
#[test]
fn precision_accumulator_and_batch_size_change_the_bits() {
    let inputs = images(64, 3);
    let all = platforms();
    let find = |s: &str| -> Platform {
        all.iter()
            .find(|p| p.to_string().contains(s))
            .unwrap_or_else(|| panic!("no platform {s}"))
            .clone()
    };
    let differs = |a: &Platform, b: &Platform| {
        let (x, y) = (run(a, &inputs), run(b, &inputs));
        x.iter()
            .flatten()
            .zip(y.iter().flatten())
            .any(|(u, v)| u.to_bits() != v.to_bits())
    };
    for (a, b) in [
        ("/f32/bs1", "/tf32/bs1"),
        ("/f16/bs1", "/bf16/bs1"),
        ("/f16/bs1", "/f16/acc-f16/bs1"),
        ("/f32/bs1", "/f32/bs32"),
    ] {
        assert!(
            differs(&find(a), &find(b)),
            "{a} and {b} gave the same bits"
        );
    }
}

/// SmolLM2 (weights from `$HSPI_SMOLLM2_GGUF` or `hspi fetch smollm2`) on the GPU against candle
/// on the CPU, both from the same dequantised GGUF matrices.
#[test]
fn smollm2_on_the_gpu_agrees_with_candle_on_the_cpu() {
    use hspi_collect::backend::{open, Batch, QuantizedLm};
    use hspi_collect::zoo::smollm2;
    use hspi_collect::Model;
    let path = smollm2::weights_path(None).expect("SmolLM2 weights: run `hspi fetch smollm2`");
    let model = Model::load(ModelId::SmolLm2, Some(&path)).unwrap();
    let prompts: Vec<Vec<u32>> = (0..8u32)
        .map(|i| (0..5 + 3 * i).map(|j| 100 + 37 * i + 11 * j).collect())
        .collect();
    let refs: Vec<&[u32]> = prompts.iter().map(Vec::as_slice).collect();
    let mut cpu = QuantizedLm::load(&path, NumericFormat::F32).unwrap();
    let want: Vec<Vec<f32>> = prompts
        .iter()
        .map(|p| cpu.next_token_logits(p).unwrap())
        .collect();
    let gpu_platforms: Vec<Platform> = platforms()
        .into_iter()
        .filter(|p| p.batch_size == 1 || p.batch_size == 8)
        .collect();
    let mut bs1_f32 = None;
    for platform in gpu_platforms {
        let mut lm = open(&model, &platform).unwrap_or_else(|e| panic!("{platform}: {e}"));
        assert_eq!(lm.batch_size(), platform.batch_size as usize);
        let got: Vec<Vec<f32>> = refs
            .chunks(platform.batch_size as usize)
            .flat_map(|batch| lm.forward(Batch::Tokens(batch)).unwrap())
            .collect();
        assert_eq!(got.len(), 8);
        assert!(got.iter().all(|l| l.len() == want[0].len()), "{platform}");
        let bound = match platform.format {
            NumericFormat::F32 => 1e-4,
            NumericFormat::Tf32 => 2e-2,
            _ => 1e-1,
        };
        assert_close(&platform, &got, &want, bound, 6);
        if platform.format == NumericFormat::F32 && platform.batch_size == 1 {
            bs1_f32 = Some(got);
        }
    }
    // Packing prompts into one batch must not mix them: each prompt's logits stay its own.
    let f32_bs8 = platforms()
        .into_iter()
        .find(|p| p.format == NumericFormat::F32 && p.kernel.is_none() && p.batch_size == 8)
        .unwrap();
    let mut lm = open(&model, &f32_bs8).unwrap();
    let packed = lm.forward(Batch::Tokens(&refs)).unwrap();
    let alone = bs1_f32.unwrap();
    assert!(relative_error(&packed, &alone) < 1e-5);
}
