//! Every architecture family hspi computes, against llama.cpp on the same weights: tiny
//! random-weight models of each (`.ci/tiny-models`: llama with Llama 3 rope scaling, qwen2,
//! qwen3, qwen3moe with 4 experts of which 2 are picked per token, gemma3 with sliding-window
//! layers and its full-attention layer's positions scaled linearly by 8, as Gemma 3 4B's are),
//! requantised by llama-quantize and served by
//! llama-server, and hspi's all-positions pass on the answer's tokens at the same format.
//! Greedy answers must agree token for token (a near tie may flip at the quantised types, where
//! candle's and ggml's kernels round differently) and the logprobs closely. Measured here (24
//! positions, mean |Δ logprob|): at F32 3e-5 to 9e-4 (SmolLM2's F32 file: 7e-4), at Q8_0, Q4_0
//! and Q4_K_M 8e-4 to 1.2e-2 (SmolLM2's Q8_0: 5.1e-2), every greedy token equal. A family
//! computed wrongly fails: Llama 3's rotary divisors left out, the tiny llama is 8.4e-3 off at
//! F32 (the bar is 2e-3); the tiny gemma3's linear scaling left out, 3.0e-2.
//!
//! The second test audits each family's llama-servers on fresh prompts as `hspi audit --weights`
//! does (200 replayed audits of answers collected once).
//!
//! The third holds every dense family's served path (the market's formats, as vLLM computes them)
//! against vLLM-CPU at bf16, on tiny models whose heads are as wide as vLLM's CPU attention
//! serves (32: `llama-h32`, `qwen2-h32`, `qwen3-h32`, and gemma3's own), then audits vLLM's
//! answers to fresh prompts with those references.

mod common;

use common::forced_gap::Gap;
use common::fresh::{answers_with_references_of, replayed, verdicts};
use common::vllm::Vllm;
use common::{assert_stated_live, forced_gap, llama, tokenize};
use hspi_collect::zoo::codec::Codec;
use hspi_datasets::NumericFormat;

/// Long enough that gemma3's windowed layers (a window of 12) see only part of it.
const PROMPT: &str = "The river came upon the great city of gold and silver, where the \
    merchants of the east sold spices, silk and amber to travellers from every land";
const ANSWER: usize = 24;

/// Every family hspi computes, by its tiny model's name.
const FAMILIES: [&str; 5] = ["llama", "qwen2", "qwen3", "qwen3moe", "gemma3"];

/// The dense families at head widths vLLM-CPU serves, by their tiny models' names.
const VLLM_FAMILIES: [&str; 4] = ["llama-h32", "qwen2-h32", "qwen3-h32", "gemma3"];

fn tiny_model(arch: &str) -> std::path::PathBuf {
    let p = llama::cache().join(format!("tiny-models/{arch}/{arch}-F32.gguf"));
    assert!(
        p.exists(),
        "{} is missing: run .ci/setup (.ci/tiny-models)",
        p.display()
    );
    p
}

#[test]
fn each_family_answers_as_llama_cpp_computes_it() {
    let build = llama::build("avx2");
    let dir = tempfile::tempdir().unwrap();
    let mut report = Vec::new();
    for (arch, file_type) in FAMILIES
        .into_iter()
        .flat_map(|a| ["F32", "Q8_0", "Q4_0", "Q4_K_M"].map(|f| (a, f)))
    {
        let path = build
            .quantize(&tiny_model(arch), file_type, &dir.path().join(arch))
            .unwrap();
        let format: NumericFormat = file_type.to_ascii_lowercase().parse().unwrap();
        let arch = format!("{arch} {file_type}");
        let prompt = Codec::from_gguf(&path).unwrap().text_ids(PROMPT).unwrap();
        let gap = {
            let server = llama::LlamaServer::start(&build, &path, "tiny")
                .unwrap_or_else(|e| panic!("llama-server ({arch}) did not start: {e}"));
            forced_gap::gap(&server, &path, format, &prompt, ANSWER)
        };
        report.push(format!("{arch}: {gap}"));
        let (agree, mean) = (gap.agree, gap.mean);
        if file_type == "F32" {
            assert_eq!(
                agree, ANSWER,
                "{arch}: hspi's greedy tokens against llama-server's"
            );
            assert!(mean < 2e-3, "{arch}: mean |Δ logprob| {mean}");
        } else {
            assert!(agree >= ANSWER - 2, "{arch}: greedy {agree}/{ANSWER}");
            assert!(
                mean < 0.05,
                "{arch}: mean |Δ logprob| {mean} (SmolLM2: 0.051 to 0.058)"
            );
        }
        // Peaked as a trained model's answers are, not uniform noise (0.003 at the usual init).
        assert!(gap.greedy_p > 0.1, "{arch}: {gap}");
    }
    eprintln!("{}", report.join("\n"));
}

/// SmolLM2 (its packaged GGUF requantised by llama-quantize) against llama-server at F16, Q8_0
/// and Q4_0, as the families above (its Q8_0 and Q4_0 products on hspi's kernels with candle's
/// bits, `unpacked_q8.rs`).
#[test]
fn smollm2_answers_as_llama_cpp_computes_it() {
    let build = llama::build("avx2");
    let mut report = Vec::new();
    for quant in ["F16", "Q8_0", "Q4_0"] {
        let path = llama::gguf(quant);
        let prompt = Codec::from_gguf(&path).unwrap().text_ids(PROMPT).unwrap();
        let server = llama::LlamaServer::start(&build, &path, "smollm2")
            .unwrap_or_else(|e| panic!("llama-server ({quant}) did not start: {e}"));
        let format: NumericFormat = quant.to_ascii_lowercase().parse().unwrap();
        let gap = forced_gap::gap(&server, &path, format, &prompt, ANSWER);
        report.push(format!("SmolLM2 {quant}: {gap}"));
        // Measured (docs/models.md): F16 1.0e-3, Q8_0 5.1e-2, Q4_0 5.8e-2 (21 of 24 greedy
        // tokens: near ties). Q8_0 was 6.6e-2 while candle's AVX-VNNI kernel, rounding the
        // activations per 256 values, ran on CPUs that have it (`kernel_tier.rs` pins AVX2).
        let (agree, bar) = match quant {
            "F16" => (ANSWER, 2e-3),
            _ => (ANSWER - 4, 0.065),
        };
        assert!(
            gap.agree >= agree && gap.mean < bar,
            "SmolLM2 {quant}: {gap}"
        );
    }
    eprintln!("{}", report.join("\n"));
}

/// Answers per provider for the replayed audits.
const AUDITED: usize = 32;

/// Each family's tiny model served by llama-server at F16 (honest) and at Q8_0 and Q4_0 sold as
/// F16, audited on fresh prompts with hspi's references on the provider's own tokens: 200
/// replayed audits each, at most 64 output tokens. The honest provider is never a mismatch and
/// consistent in >= 95 %; the substitutes are a mismatch in >= 198 of 200.
#[test]
fn each_familys_substitutes_are_caught_on_fresh_prompts_and_honest_f16_never_accused() {
    let build = llama::build("avx2");
    let dir = tempfile::tempdir().unwrap();
    let formats: Vec<NumericFormat> = ["f32", "f16", "q8_0", "q4_0"]
        .map(|f| f.parse().unwrap())
        .into();
    for (i, arch) in FAMILIES.into_iter().enumerate() {
        let weights = tiny_model(arch);
        let model = format!("tiny-{arch}");
        for (j, file_type) in ["F16", "Q8_0", "Q4_0"].into_iter().enumerate() {
            let served = build
                .quantize(&weights, file_type, &dir.path().join(arch))
                .unwrap();
            let server = llama::LlamaServer::start(&build, &served, &model)
                .unwrap_or_else(|e| panic!("llama-server ({arch} {file_type}) did not start: {e}"));
            let out = dir.path().join(format!("{arch}-{file_type}"));
            let seed = 100 + (i * 3 + j) as u64;
            let (answers, refs) = answers_with_references_of(
                &model,
                &weights,
                &server.url,
                seed,
                AUDITED,
                &formats,
                &out,
            );
            let tally = replayed(&answers, &refs, "*/*/f16/*", 64);
            if file_type == "F16" {
                assert_eq!(
                    verdicts(&tally, "mismatch"),
                    0,
                    "{arch} honest F16: {tally}"
                );
                // docs/how-hspi-decides.md: consistent 200/200.
                assert_stated_live(
                    &format!("{arch} honest F16 consistent: {tally}"),
                    verdicts(&tally, "consistent"),
                    200,
                );
            } else {
                assert!(
                    verdicts(&tally, "mismatch") >= 198,
                    "{arch} {file_type} sold as F16: {tally}"
                );
            }
        }
    }
}

/// `gguf` with its `tokenizer.ggml.pre` set to `pre`, written to `out` (tensors as they are).
fn with_pre_tokenizer(gguf: &std::path::Path, pre: &str, out: &std::path::Path) {
    use candle_core::quantized::gguf_file;
    let mut file = std::fs::File::open(gguf).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let tensors: Vec<_> = names
        .iter()
        .map(|n| {
            content
                .tensor(&mut file, n, &candle_core::Device::Cpu)
                .unwrap()
        })
        .collect();
    let pre = gguf_file::Value::String(pre.into());
    let mut metadata: Vec<(&str, &gguf_file::Value)> = content
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), if k == "tokenizer.ggml.pre" { &pre } else { v }))
        .collect();
    metadata.sort_by_key(|(k, _)| *k);
    let named: Vec<(&str, &candle_core::quantized::QTensor)> =
        names.iter().map(|n| n.as_str()).zip(&tensors).collect();
    let mut w = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
    gguf_file::write(&mut w, &metadata, &named).unwrap();
}

/// Every byte-level BPE pre-tokenizer hspi reads (SmolLM's, GPT-2's, Llama 3's, Qwen 2's), on
/// the tiny llama's vocabulary relabelled with each: hspi's ids equal llama-server's on 64
/// fresh prompts, the shipped pack's pool and the edge cases, raw and through the chat
/// template.
#[test]
fn every_pre_tokenizer_reads_prompts_as_llama_server_does() {
    let build = llama::build("avx2");
    let dir = tempfile::tempdir().unwrap();
    let mut texts = tokenize::prompt_texts(&hspi_probe::fresh_prompts(9, 64, 8, 5));
    let pool: hspi_datasets::ProbeSet =
        serde_json::from_slice(&std::fs::read(common::shipped_pack().join("pool.json")).unwrap())
            .unwrap();
    texts.extend(tokenize::prompt_texts(&pool));
    texts.extend(tokenize::EDGES.map(String::from));
    for pre in ["smollm", "gpt-2", "llama-bpe", "qwen2"] {
        let path = dir.path().join(format!("{pre}.gguf"));
        with_pre_tokenizer(&tiny_model("llama"), pre, &path);
        let server = llama::LlamaServer::start(&build, &path, "tiny")
            .unwrap_or_else(|e| panic!("llama-server ({pre}) did not start: {e}"));
        let codec = Codec::from_gguf(&path).unwrap();
        let differ = tokenize::differing(&codec, &server.url, &texts);
        assert!(
            differ.is_empty(),
            "{pre}: hspi's ids differ from llama-server's on {differ:#?}"
        );
    }
    // A pre-tokenizer hspi does not know is refused by name, never guessed.
    let path = dir.path().join("deepseek.gguf");
    with_pre_tokenizer(&tiny_model("llama"), "deepseek-v3", &path);
    let e = Codec::from_gguf(&path).err().expect("refused").to_string();
    assert!(e.contains("'deepseek-v3'") && e.contains("qwen2"), "{e}");
}

/// `arch`'s tiny model served by vLLM-CPU at `dtype`: its greedy answer's gap to hspi's pass at
/// `format`, then its answers to [`AUDITED`] fresh prompts (seed `seed`) with hspi's references
/// at `formats` on their tokens, under `dir`.
fn vllm_answers(
    arch: &str,
    dtype: &str,
    format: NumericFormat,
    seed: u64,
    formats: &[NumericFormat],
    dir: &std::path::Path,
) -> (Gap, std::path::PathBuf, std::path::PathBuf) {
    let (weights, model, vllm) = served_by_vllm(arch, dtype);
    let gap = vllm_gap(&vllm, &model, &weights, format);
    let (answers, refs) = answers_with_references_of(
        &model,
        &weights,
        &vllm.url,
        seed,
        AUDITED,
        formats,
        &dir.join(arch),
    );
    (gap, answers, refs)
}

/// `arch`'s tiny model (its GGUF file) and vLLM-CPU serving its checkpoint at `dtype` under
/// the name `tiny-ARCH`.
fn served_by_vllm(arch: &str, dtype: &str) -> (std::path::PathBuf, String, Vllm) {
    let weights = tiny_model(arch);
    let checkpoint = weights.parent().unwrap().join("hf");
    let model = format!("tiny-{arch}");
    let vllm = Vllm::serve(&checkpoint, dtype, &["--served-model-name", &model]);
    (weights, model, vllm)
}

/// vLLM's greedy answer to the prompt against hspi's references at `format`.
fn vllm_gap(vllm: &Vllm, model: &str, weights: &std::path::Path, format: NumericFormat) -> Gap {
    let prompt = Codec::from_gguf(weights).unwrap().text_ids(PROMPT).unwrap();
    forced_gap::vllm_gap(&vllm.url, model, weights, format, &prompt, ANSWER)
}

/// Each dense family served by vLLM-CPU at bf16 (its tiny model's safetensors checkpoint, as
/// `.ci/tiny-models` wrote it) against hspi's served path on the same weights (read from the
/// model's GGUF file): a greedy answer's tokens and logprobs, then 200 replayed fresh-prompt
/// audits with hspi's bf16 and f16 references as `hspi audit --weights` computes them — claimed
/// bf16 never accused and consistent within 256 output tokens, sold as fp16 caught within 64.
#[test]
fn each_dense_family_served_by_vllm_answers_as_the_served_path_computes_it() {
    let dir = tempfile::tempdir().unwrap();
    let formats: Vec<NumericFormat> = ["bf16", "f16"].map(|f| f.parse().unwrap()).into();
    let as_measured = common::vllm::bf16_as_measured();
    let mut report = Vec::new();
    let mut failed = Vec::new();
    for (i, arch) in VLLM_FAMILIES.into_iter().enumerate() {
        let (gap, answers, refs) = vllm_answers(
            arch,
            "bfloat16",
            NumericFormat::Bf16,
            200 + i as u64,
            &formats,
            dir.path(),
        );
        let honest = replayed(&answers, &refs, "*/*/bf16/*", 256);
        // Within 64 output tokens since every printed token is a position of the references
        // (Gemma's newline runs, a random model's odd splits: its text read again had merged
        // them) and an answer compared at every position counts up to 2 nats: gemma3 188 and
        // llama-h32 192 of 200 before, on `_C_AVX2`.
        let sold = replayed(&answers, &refs, "*/*/fp16/*", 64);
        let line = format!(
            "{arch} bf16: {gap}; claimed bf16 consistent {} (mean {:.0} tokens) accused {}; sold \
             as fp16 mismatch {} within {} tokens",
            verdicts(&honest, "consistent"),
            honest["mean_output_tokens"].as_f64().unwrap(),
            common::fresh::accusations(&honest),
            verdicts(&sold, "mismatch"),
            sold["max_output_tokens"]
        );
        eprintln!("{line}");
        // A near tie may flip one greedy token; the bar is about SmolLM2's own gap to vLLM.
        // Where vLLM multiplies bf16 with other kernels than those measured (`_C`, `_C_AVX2`;
        // `_C_AVX512` never was), the gap and the confirmation are reported, not asserted; never
        // accused and a substitute caught hold on every CPU.
        let close = !as_measured || (gap.agree + 1 >= gap.positions && gap.mean < 2e-2);
        let confirmed = !as_measured || verdicts(&honest, "consistent") >= 190;
        let audited = common::fresh::accusations(&honest) == 0
            && confirmed
            && verdicts(&sold, "mismatch") >= 198;
        if !(close && audited) {
            failed.push(line.clone());
        }
        report.push(line);
    }
    eprintln!("{}", report.join("\n"));
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// On demand (`cargo test --release --test architectures -- --ignored`, about two minutes):
/// each dense family served by vLLM-CPU at fp32 against hspi's pass of llama.cpp's F32 on the
/// same weights — a greedy answer's tokens and logprobs (the guide's fp32 column,
/// docs/models.md), every greedy token equal and the mean |Δ logprob| within what SmolLM2 shows —
/// then 200 replayed fresh-prompt audits with hspi's f32, f16 and bf16 references: claimed fp32
/// never accused and consistent in 190 of 200 within 256 output tokens, sold as bf16 caught in
/// 198 of 200 within 64.
#[test]
#[ignore]
fn each_dense_family_served_by_vllm_at_fp32_answers_as_the_f32_pass_computes_it() {
    let dir = tempfile::tempdir().unwrap();
    let formats: Vec<NumericFormat> = ["f32", "f16", "bf16"].map(|f| f.parse().unwrap()).into();
    let mut report = Vec::new();
    for (i, arch) in VLLM_FAMILIES.into_iter().enumerate() {
        let (gap, answers, refs) = vllm_answers(
            arch,
            "float32",
            NumericFormat::F32,
            300 + i as u64,
            &formats,
            dir.path(),
        );
        let honest = replayed(&answers, &refs, "*/*/f32/*", 256);
        let sold = replayed(&answers, &refs, "*/*/bf16/*", 64);
        eprintln!(
            "{arch} fp32: {gap}; claimed fp32 consistent {} accused {}; sold as bf16 mismatch {} \
             within 64 tokens",
            verdicts(&honest, "consistent"),
            common::fresh::accusations(&honest),
            verdicts(&sold, "mismatch")
        );
        report.push((arch, gap, honest, sold));
    }
    for (arch, gap, honest, sold) in &report {
        assert_eq!(common::fresh::accusations(honest), 0, "{arch}: {honest}");
        assert!(verdicts(honest, "consistent") >= 190, "{arch}: {honest}");
        assert!(verdicts(sold, "mismatch") >= 198, "{arch}: {sold}");
        assert!(
            gap.agree == gap.positions && gap.mean < 1e-3,
            "{arch} fp32: {gap}"
        );
    }
}
