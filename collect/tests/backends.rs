//! The backend registry, walked entry by entry: every backend lists the platforms it runs each
//! zoo model at here, or says why it runs none; every listed platform maps back to its backend,
//! passes the capability check, and (for the models at hand) computes logits.

use std::path::PathBuf;

use hspi_collect::backend::{self, backend_for, Batch, BACKENDS};
use hspi_collect::zoo::{cnn_digits, smollm2, TinyLm};
use hspi_collect::{Model, ModelId};
use hspi_datasets::{ModelInfo, Platform};

/// Each zoo model, without loading SmolLM2's weights when they are not cached: listing and
/// checking platforms never reads them.
fn model(id: ModelId) -> Model {
    match id {
        ModelId::CnnDigits => Model::Image(cnn_digits::embedded()),
        ModelId::TinyLm => Model::Tiny(TinyLm::embedded()),
        ModelId::SmolLm2 => Model::Lm {
            path: smollm2::weights_path(None).unwrap_or_else(|_| PathBuf::from("not-fetched.gguf")),
            info: ModelInfo::new("smollm2", "", hspi_datasets::CAUSAL_LM),
        },
    }
}

#[test]
fn every_backend_lists_its_platforms_for_every_model_or_says_why_not() {
    let mut listed = 0;
    for backend in BACKENDS {
        for id in ModelId::ALL {
            let m = model(id);
            match backend.platforms(id) {
                Ok(platforms) => {
                    assert!(
                        !platforms.is_empty(),
                        "{} lists nothing for {}",
                        backend.name(),
                        id.name()
                    );
                    for p in &platforms {
                        let owner = backend_for(p).map(|b| b.name());
                        assert_eq!(owner, Some(backend.name()), "{p} maps to another backend");
                        assert_eq!(p.to_string().parse::<Platform>().as_ref(), Ok(p));
                        backend::check(&m, p).unwrap_or_else(|e| panic!("{p} listed but: {e}"));
                    }
                    listed += platforms.len();
                }
                Err(why) => {
                    let why = why.to_string();
                    assert!(
                        why.len() > 20,
                        "{}: {why:?} says too little",
                        backend.name()
                    );
                    eprintln!("{} / {}: {why}", backend.name(), id.name());
                }
            }
        }
    }
    // candle: 3 + 3 + 5 (SmolLM2's formats); emulated: the 23 image kernels.
    assert!(listed >= 34, "{listed}");
}

#[test]
fn the_default_grid_is_candle_then_the_emulated_kernels() {
    let grid = backend::default_grid(ModelId::CnnDigits);
    assert_eq!(grid.len(), 26);
    let names: Vec<&str> = grid
        .iter()
        .map(|p| backend_for(p).unwrap().name())
        .collect();
    assert_eq!(names[..3], ["candle"; 3]);
    assert!(names[3..].iter().all(|n| *n == "emulated"));
    assert_eq!(backend::default_grid(ModelId::TinyLm).len(), 3);
    assert!(
        backend::gpus_for(&grid).is_empty(),
        "CPU platforms name no GPU"
    );
}

#[test]
fn a_runner_from_each_cpu_backend_computes_one_batch() {
    for id in [ModelId::CnnDigits, ModelId::TinyLm] {
        let m = model(id);
        for platform in backend::default_grid(id).iter().step_by(5) {
            let mut runner = backend::open(&m, platform).unwrap();
            assert_eq!(runner.platform(), platform);
            let logits = match &m {
                Model::Image(image) => {
                    let x = vec![0.5f32; image.input_len()];
                    runner.forward(Batch::Images(&[&x])).unwrap()
                }
                _ => runner.forward(Batch::Tokens(&[&[3, 1, 4, 1, 5]])).unwrap(),
            };
            assert_eq!(logits.len(), 1, "{platform}");
            assert!(logits[0].len() >= 10 && logits[0].iter().all(|v| v.is_finite()));
            // The other kind of input is refused with the runner's platform named.
            let wrong = match &m {
                Model::Image(_) => runner.forward(Batch::Tokens(&[&[1]])),
                _ => runner.forward(Batch::Images(&[&[0.0]])),
            };
            let e = wrong.unwrap_err().to_string();
            assert!(e.contains(&platform.to_string()), "{e}");
        }
    }
}

#[test]
fn platforms_no_backend_runs_are_refused_with_the_reason() {
    let m = model(ModelId::CnnDigits);
    let isa = hspi_datasets::provenance::isa_path();
    let llama: Platform = format!("cpu-{isa}/llamacpp/f16/bs1").parse().unwrap();
    assert!(backend_for(&llama).is_none());
    let e = backend::check(&m, &llama).unwrap_err().to_string();
    assert!(e.contains("no local backend"), "{e}");

    let other = if isa == "avx2" { "avx512" } else { "avx2" };
    let elsewhere: Platform = format!("cpu-{other}/candle-0.11.1/f32/bs1")
        .parse()
        .unwrap();
    let e = backend::check(&m, &elsewhere).unwrap_err().to_string();
    assert!(e.contains("CPU path"), "{e}");

    let tiny = model(ModelId::TinyLm);
    let q8: Platform = format!("cpu-{isa}/candle-0.11.1/q8_0/bs1").parse().unwrap();
    let e = backend::check(&tiny, &q8).unwrap_err().to_string();
    assert!(e.contains("formats for this model"), "{e}");

    let gpu: Platform = "cuda-h100-sm90-132sm/cublas/f32/bs1".parse().unwrap();
    assert_eq!(backend_for(&gpu).map(|b| b.name()), Some("cuda"));
    if backend::named("cuda").unwrap().gpus().is_empty() {
        assert!(backend::check(&m, &gpu).is_err());
    }
}
