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

/// The tiny models of every dense family cut to 1,024 tokens (`.ci/gpu-tiny-models`), from
/// `$HSPI_GPU_TINY_MODELS`: GGUF files as llama.cpp's converter wrote them and, under `hf/`, the
/// same weights as checkpoints.
fn tiny_models() -> std::path::PathBuf {
    std::env::var_os("HSPI_GPU_TINY_MODELS")
        .map(Into::into)
        .expect(
            "HSPI_GPU_TINY_MODELS names the tiny models' directory; hint: \
             .ci/gpu-tiny-models ~/.cache/hspi/tiny-models DIR",
        )
}

/// Eight prompts of 5 to 40 tokens (past gemma3's window of 12), as .ci/gpu-torch-logits
/// builds them.
fn family_prompts(vocab: usize) -> Vec<Vec<u32>> {
    (0..8usize)
        .map(|i| {
            (0..5 + 5 * i)
                .map(|j| ((100 + 37 * i + 11 * j) % vocab) as u32)
                .collect()
        })
        .collect()
}

/// The dense families' tiny models: plain llama (as SmolLM2), llama with Llama 3's rotary
/// scaling, qwen2 (q/k/v biases), qwen3 (q/k norms, heads 24 wide), gemma3 (windowed layers,
/// linearly scaled full attention, four norms a layer, GELU-tanh, scaled embeddings).
const DENSE: [&str; 5] = ["llama-plain", "llama", "qwen2", "qwen3", "gemma3"];

/// A dense family's cut model: its file, the model, hspi's CPU pass of it at F32 and the
/// vocabulary's size.
fn dense_family(
    dir: &std::path::Path,
    arch: &str,
) -> (
    std::path::PathBuf,
    hspi_collect::Model,
    hspi_collect::backend::QuantizedLm,
    usize,
) {
    let path = dir.join(format!("{arch}.gguf"));
    let model = hspi_collect::Model::language_model(arch, &path).unwrap();
    let mut cpu = hspi_collect::backend::QuantizedLm::load(&path, NumericFormat::F32).unwrap();
    let vocab = cpu.next_token_logits(&[1]).unwrap().len();
    (path, model, cpu, vocab)
}

fn gpu_logits(
    model: &hspi_collect::Model,
    platform: &Platform,
    prompts: &[Vec<u32>],
) -> Vec<Vec<f32>> {
    use hspi_collect::backend::{open, Batch};
    let mut lm = open(model, platform).unwrap_or_else(|e| panic!("{platform}: {e}"));
    let refs: Vec<&[u32]> = prompts.iter().map(Vec::as_slice).collect();
    refs.chunks(platform.batch_size as usize)
        .flat_map(|batch| lm.forward(Batch::Tokens(batch)).unwrap())
        .collect()
}

fn f32_bs(bs: u32) -> Platform {
    platforms()
        .into_iter()
        .find(|p| p.format == NumericFormat::F32 && p.kernel.is_none() && p.batch_size == bs)
        .unwrap()
}

/// Every dense family on every GPU precision at batch sizes 1 and 8, against hspi's CPU pass of
/// llama.cpp's formats at F32 on the same GGUF file; prompts packed into a batch stay their
/// own; the checkpoint of the same weights gives the GGUF file's bits.
#[test]
fn every_dense_family_on_the_gpu_agrees_with_the_cpu() {
    use hspi_collect::Model;
    let dir = tiny_models();
    for arch in DENSE {
        let (_, model, mut cpu, vocab) = dense_family(&dir, arch);
        let prompts = family_prompts(vocab);
        let want: Vec<Vec<f32>> = prompts
            .iter()
            .map(|p| cpu.next_token_logits(p).unwrap())
            .collect();
        for platform in platforms()
            .into_iter()
            .filter(|p| p.batch_size == 1 || p.batch_size == 8)
        {
            let got = gpu_logits(&model, &platform, &prompts);
            assert_eq!(got.len(), 8, "{arch} {platform}");
            assert!(
                got.iter().flatten().all(|v| v.is_finite()),
                "{arch} {platform}"
            );
            println!(
                "{arch} {platform}: relative error {:.2e} against the CPU's F32",
                relative_error(&got, &want)
            );
            let bound = match platform.format {
                NumericFormat::F32 => 1e-4,
                NumericFormat::Tf32 => 2e-2,
                _ => 1e-1,
            };
            assert_close(&platform, &got, &want, bound, 6);
        }
        let alone = gpu_logits(&model, &f32_bs(1), &prompts);
        let packed = gpu_logits(&model, &f32_bs(8), &prompts);
        assert!(
            relative_error(&packed, &alone) < 1e-5,
            "{arch}: prompts packed into one batch mixed"
        );
        let hf = dir.join("hf").join(arch);
        if hf.is_dir() {
            let checkpoint = Model::language_model(arch, &hf).unwrap();
            let from_checkpoint = gpu_logits(&checkpoint, &f32_bs(1), &prompts);
            if arch == "llama" {
                // Llama 3's frequencies: the GGUF file's `rope_freqs` divisors and the
                // checkpoint's formula differ in the last bit of some.
                assert!(relative_error(&from_checkpoint, &alone) < 1e-5, "{arch}");
            } else {
                let bits = |l: &[Vec<f32>]| -> Vec<u32> {
                    l.iter().flatten().map(|v| v.to_bits()).collect()
                };
                assert_eq!(
                    bits(&from_checkpoint),
                    bits(&alone),
                    "{arch}: the checkpoint and the GGUF file of the same weights differ"
                );
            }
        }
    }
}

/// hspi's GPU pass as a fresh audit's reference engine (`--reference-gpu`): one causal pass
/// over a 40-token context gives the logits after each of its last 31 prefixes as each prefix
/// computed alone does (the same GPU at f32; only the GEMMs' row counts differ), and as hspi's
/// CPU pass of llama.cpp's F32 does. (The engine's token steps are the CPU formats' rule,
/// `token_steps`; the cut models carry no tokenizer.)
#[test]
fn the_gpu_pass_scores_every_position_of_an_answer_in_one_pass() {
    use hspi_collect::backend::gpu_all_positions;
    let dir = tiny_models();
    for arch in DENSE {
        let (path, model, mut cpu, vocab) = dense_family(&dir, arch);
        let context = family_prompts(vocab)[7].clone();
        let from = 10;
        let mut engine = gpu_all_positions(&path, NumericFormat::F32).unwrap();
        assert!(
            engine.platform().to_string().starts_with("cuda-"),
            "{}",
            engine.platform()
        );
        let start = std::time::Instant::now();
        let rows = engine.logits_from(&context, from).unwrap();
        let seconds = start.elapsed().as_secs_f64();
        assert_eq!(rows.len(), context.len() - from + 1, "{arch}");
        let prefixes: Vec<Vec<u32>> = (from..=context.len())
            .map(|k| context[..k].to_vec())
            .collect();
        let alone = gpu_logits(&model, &f32_bs(1), &prefixes);
        let on_cpu: Vec<Vec<f32>> = prefixes
            .iter()
            .map(|p| cpu.next_token_logits(p).unwrap())
            .collect();
        let (gpu_distance, gpu_greedy) = logprob_distance(&rows, &alone);
        let (cpu_distance, cpu_greedy) = logprob_distance(&rows, &on_cpu);
        println!(
            "{arch}: {} positions in one pass in {:.1} ms; mean |Δ logprob| against each prefix \
             alone on the GPU {gpu_distance:.1e} (greedy {gpu_greedy}/{n}), against the CPU's \
             F32 {cpu_distance:.1e} (greedy {cpu_greedy}/{n})",
            rows.len(),
            seconds * 1e3,
            n = rows.len()
        );
        assert!(gpu_distance < 1e-5, "{arch}: {gpu_distance}");
        assert!(cpu_distance < 1e-5, "{arch}: {cpu_distance}");
        assert_eq!(gpu_greedy, rows.len(), "{arch}");
    }
    // A precision the GPU pass does not compute is named.
    let e = gpu_all_positions(&dir.join("llama.gguf"), "q8_0".parse().unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not q8_0"), "{e}");
}

/// A mixture of experts is refused by name, before any GPU work.
#[test]
fn a_mixture_of_experts_is_refused_by_name_on_the_gpu() {
    let path = tiny_models().join("qwen3moe.gguf");
    let model = hspi_collect::Model::language_model("qwen3moe", &path).unwrap();
    let e = hspi_collect::backend::open(&model, &f32_bs(1))
        .err()
        .expect("a mixture of experts is refused")
        .to_string();
    assert!(e.contains("mixture of experts"), "{e}");
}

/// Log-softmax of a logit row, in f64.
fn log_softmax(row: &[f32]) -> Vec<f64> {
    let max = row.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v)) as f64;
    let sum: f64 = row.iter().map(|v| (*v as f64 - max).exp()).sum();
    row.iter().map(|v| *v as f64 - max - sum.ln()).collect()
}

/// Mean |Δ logprob| over every token of every prompt, and on how many prompts the greedy token
/// is the same.
fn logprob_distance(a: &[Vec<f32>], b: &[Vec<f32>]) -> (f64, usize) {
    let (mut sum, mut n) = (0f64, 0usize);
    for (x, y) in a.iter().zip(b) {
        for (u, v) in log_softmax(x).iter().zip(log_softmax(y)) {
            sum += (u - v).abs();
            n += 1;
        }
    }
    let same = a
        .iter()
        .zip(b)
        .filter(|(x, y)| top_label(x) == top_label(y))
        .count();
    (sum / n as f64, same)
}

/// PyTorch's logits for `arch` at `dtype` (`.ci/gpu-torch-logits`, from `$HSPI_GPU_TORCH_LOGITS`),
/// one row per prompt.
fn torch_logits(dir: &std::path::Path, arch: &str, dtype: &str, vocab: usize) -> Vec<Vec<f32>> {
    let path = dir.join(format!("{arch}-{dtype}.bin"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let values: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(values.len(), 8 * vocab, "{}", path.display());
    values.chunks(vocab).map(<[f32]>::to_vec).collect()
}

/// hspi's CUDA pass against PyTorch (transformers) on the same GPU and checkpoint: at f32 the
/// same next-token distribution (an engine none of us wrote, computing each family its own way);
/// at bf16 the distance printed as measured, beside PyTorch's own bf16 against its f32.
#[test]
fn pytorch_on_the_same_gpu_agrees_with_the_cuda_pass() {
    let torch_dir: std::path::PathBuf = std::env::var_os("HSPI_GPU_TORCH_LOGITS")
        .map(Into::into)
        .expect("HSPI_GPU_TORCH_LOGITS names .ci/gpu-torch-logits' output directory");
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(torch_dir.join("prompts.json")).unwrap()).unwrap();
    println!(
        "PyTorch {} / transformers {} on {}",
        recorded["torch"], recorded["transformers"], recorded["gpu"]
    );
    let bf16_bs1 = platforms()
        .into_iter()
        .find(|p| p.format == NumericFormat::Bf16 && p.kernel.is_none() && p.batch_size == 1)
        .unwrap();
    for arch in ["llama", "qwen2", "qwen3", "gemma3"] {
        let model = hspi_collect::Model::language_model(arch, &tiny_models().join("hf").join(arch))
            .unwrap();
        let vocab = 1024;
        let prompts = family_prompts(vocab);
        let ids: Vec<Vec<u32>> = serde_json::from_value(recorded["prompts"].clone()).unwrap();
        assert_eq!(ids, prompts, "the prompts .ci/gpu-torch-logits used");
        let torch_f32 = torch_logits(&torch_dir, arch, "f32", vocab);
        let torch_bf16 = torch_logits(&torch_dir, arch, "bf16", vocab);
        let ours_f32 = gpu_logits(&model, &f32_bs(1), &prompts);
        let ours_bf16 = gpu_logits(&model, &bf16_bs1, &prompts);
        let f32_gap = logprob_distance(&ours_f32, &torch_f32);
        let bf16_gap = logprob_distance(&ours_bf16, &torch_bf16);
        let torch_own = logprob_distance(&torch_bf16, &torch_f32);
        println!(
            "{arch}: mean |Δ logprob| hspi f32 vs PyTorch f32 {:.2e} (greedy {}/8), hspi bf16 vs \
             PyTorch bf16 {:.2e} ({}/8), PyTorch bf16 vs its f32 {:.2e} ({}/8); relative error \
             f32 {:.2e}",
            f32_gap.0,
            f32_gap.1,
            bf16_gap.0,
            bf16_gap.1,
            torch_own.0,
            torch_own.1,
            relative_error(&ours_f32, &torch_f32)
        );
        assert!(
            f32_gap.0 < 1e-4 && f32_gap.1 == 8,
            "{arch}: hspi's f32 pass is not PyTorch's model: {f32_gap:?}"
        );
    }
}

/// What the GPU computed for every dense family, kept as datasets: each tiny model (`tiny-ARCH`)
/// at every cuBLAS precision at batch size 1 over 8 seeded prompts of 8 to 40 tokens, collected
/// into `$HSPI_GPU_ATLAS_OUT/ARCH` (committed under datasets/atlas/, read by tests/gpu_atlas.rs on
/// machines without a GPU).
#[test]
fn every_dense_family_is_collected_at_every_gpu_precision() {
    use hspi_collect::session::{collect_local, LocalCollection};
    use hspi_collect::{Model, NoProgress};
    use hspi_datasets::{OpenMode, Probe, ProbeInput, ProbeProvenance, ProbeSet};
    let out: std::path::PathBuf = std::env::var_os("HSPI_GPU_ATLAS_OUT")
        .map(Into::into)
        .expect("HSPI_GPU_ATLAS_OUT names where the families' GPU datasets go");
    let mut rng = ChaCha8Rng::seed_from_u64(46);
    let probes = ProbeSet {
        generator: "random-tokens".into(),
        seed: 46,
        probes: (0..8u64)
            .map(|index| {
                let len = rng.random_range(8..=40);
                let ids = (0..len).map(|_| rng.random_range(0..1024u32)).collect();
                Probe::new(
                    ProbeInput::Tokens { ids },
                    ProbeProvenance {
                        generator: "random-tokens".into(),
                        seed: 46,
                        index,
                    },
                )
            })
            .collect(),
    };
    let bs1: Vec<Platform> = platforms()
        .into_iter()
        .filter(|p| p.batch_size == 1)
        .collect();
    assert_eq!(bs1.len(), 5);
    for arch in DENSE {
        let model = Model::language_model(
            &format!("tiny-{arch}"),
            &tiny_models().join(format!("{arch}.gguf")),
        )
        .unwrap();
        let summary = collect_local(
            LocalCollection {
                model: &model,
                platforms: &bs1,
                probes: &probes,
                out: &out.join(arch),
                mode: OpenMode::Force,
                command:
                    "collect/tests/cuda.rs every_dense_family_is_collected_at_every_gpu_precision",
                emulate: None,
            },
            &NoProgress,
        )
        .unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(summary.written, 5 * 8, "{arch}");
        println!("{arch}: {summary}");
    }
}

/// A model of Llama 3.1 8B's shape with random weights (8.03 B parameters, made on the GPU by
/// `.ci/gpu-big-model`; its checkpoint directory in `$HSPI_GPU_BIG_MODEL`) through the CUDA
/// pass at bf16 and f32: what loading it, one forward pass, and a fresh audit's references on
/// the GPU (`--reference-gpu`: 256 answer positions after a 64-token prompt, one pass) cost,
/// printed as measured (the GPU's memory is logged beside by the caller). Its answers are
/// finite, and bf16's are f32's within bf16's reach.
#[test]
fn a_model_of_8b_parameters_runs_on_the_gpu() {
    use hspi_collect::backend::gpu_all_positions;
    let dir: std::path::PathBuf = std::env::var_os("HSPI_GPU_BIG_MODEL")
        .map(Into::into)
        .expect("HSPI_GPU_BIG_MODEL names a checkpoint directory (.ci/gpu-big-model)");
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let prompts: Vec<Vec<u32>> = (0..8)
        .map(|_| (0..64).map(|_| rng.random_range(0..128_000u32)).collect())
        .collect();
    let answer: Vec<u32> = (0..64 + 256)
        .map(|_| rng.random_range(0..128_000u32))
        .collect();
    let mut answers = Vec::new();
    for format in [NumericFormat::Bf16, NumericFormat::F32] {
        let t = std::time::Instant::now();
        let mut lm = gpu_all_positions(&dir, format).unwrap_or_else(|e| panic!("{format}: {e}"));
        let load = t.elapsed();
        let platform = lm.platform().clone();
        lm.logits_from(&prompts[0], 64).unwrap();
        let t = std::time::Instant::now();
        let got: Vec<Vec<f32>> = prompts
            .iter()
            .flat_map(|p| lm.logits_from(p, p.len()).unwrap())
            .collect();
        let pass = t.elapsed() / prompts.len() as u32;
        assert!(got.iter().flatten().all(|v| v.is_finite()), "{platform}");
        let t = std::time::Instant::now();
        let scored = lm.logits_from(&answer, 64).unwrap();
        let forced = t.elapsed();
        assert_eq!(scored.len(), 257, "{platform}");
        println!(
            "{platform}: loaded in {:.1} s; one 64-token prompt's pass {:.1} ms ({:.2} ms per \
             token); 256 answer positions scored in one pass in {:.1} ms ({:.2} ms per audited \
             token, the logits brought back included)",
            load.as_secs_f64(),
            pass.as_secs_f64() * 1e3,
            pass.as_secs_f64() * 1e3 / 64.0,
            forced.as_secs_f64() * 1e3,
            forced.as_secs_f64() * 1e3 / 256.0
        );
        answers.push(got);
        drop(lm);
    }
    let err = relative_error(&answers[0], &answers[1]);
    println!("bf16 against f32: relative error {err:.2e}");
    assert!(err < 1e-1, "bf16 is {err:e} from f32");
}
