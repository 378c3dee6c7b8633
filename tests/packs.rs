//! Audit packs end to end: the shipped SmolLM2 pack checked and installed, one-command audits of
//! real llama-servers (a Q8_0 provider claiming F16 is caught, an F16 one passes, two audits draw
//! different prompts), the same servers answering without token ids (as most providers do), a
//! pack whose references come from a trusted llama-server, the API contract lines (billing,
//! parameters, transport) through proxies that break one rule each, and refusals (an altered
//! byte, another model).

mod common;

use std::path::Path;

use common::llama::start;
use common::proxy::Proxy;
use common::*;

const CLAIM: &str = "*/llamacpp/f16/*";

/// `hspi audit --pack` of `base` claiming F16, retrying what a flaky proxy fails.
fn audit(pack: &Path, base: &str, out: &Path, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let mut args = vec!["--retries", "8"];
    args.extend_from_slice(extra);
    pack_audit(pack, base, CLAIM, out, &args)
}

/// Every generated token of a chat answer (`choices[].logprobs.content[]`).
fn tokens(answer: &mut serde_json::Value) -> impl Iterator<Item = &mut serde_json::Value> {
    answer["choices"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .flat_map(|c| {
            c["logprobs"]["content"]
                .as_array_mut()
                .into_iter()
                .flatten()
        })
}

fn check<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["contract"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} line: {report}"))
}

fn drawn(report: &serde_json::Value) -> Vec<String> {
    serde_json::from_value(report["draw"]["probes"].clone()).unwrap()
}

/// The provider's verdicts with one pack: Q8_0 caught naming q8_0 within 64 output tokens,
/// F16 consistent; every contract line passes on an honest llama-server.
fn provider_verdicts(pack: &Path, q8: &str, f16: &str, tmp: &Path, name: &str) {
    let (code, r, err) = audit(pack, q8, &tmp.join(format!("{name}-q8")), &[]);
    assert_eq!(code, 1, "{name}: Q8_0 claimed as F16 is a mismatch: {err}");
    assert_eq!(format_verdict(&r), "mismatch", "{name}: {r}");
    let verdict = r["evidence"]["verification"]["verdict"].to_string();
    assert!(verdict.contains("q8_0"), "{name}: names q8_0: {verdict}");
    assert!(
        r["spent"]["output_tokens"].as_u64().unwrap() <= 64,
        "{name}"
    );
    let (code, r, err) = audit(pack, f16, &tmp.join(format!("{name}-f16")), &[]);
    assert_eq!(code, 0, "{name}: honest F16 is consistent: {err}");
    for line in ["billing", "parameters", "transport"] {
        assert_eq!(check(&r, line)["status"], "pass", "{name}: {line}: {r}");
    }
}

#[test]
fn one_command_audits_with_a_pack_decide_the_claim_and_check_the_contract() {
    let tmp = tempfile::tempdir().unwrap();
    let pack = shipped_pack();
    ok(&["pack", "verify", pack.to_str().unwrap()]);
    let (q8, f16) = (start("avx2", "Q8_0"), start("avx2", "F16"));
    provider_verdicts(&pack, &q8.url, &f16.url, tmp.path(), "shipped");

    // Two audits draw different prompts from the pool.
    let (_, a, _) = audit(&pack, &f16.url, &tmp.path().join("draw-a"), &[]);
    let (_, b, _) = audit(&pack, &f16.url, &tmp.path().join("draw-b"), &[]);
    assert_ne!(drawn(&a), drawn(&b), "every audit draws afresh");
    assert_eq!(a["draw"]["pool"], 108);

    // Most providers (vLLM, OpenAI) name tokens by string and bytes only, no ids: the same
    // servers behind a proxy that drops every id get the same verdicts from the id-carrying
    // references, their answers matched with them token by token and alternative by alternative.
    let drop_ids = |upstream: &str| {
        Proxy::start(
            upstream,
            Box::new(|_, v| {
                for t in tokens(v) {
                    t.as_object_mut().unwrap().remove("id");
                    for alt in t["top_logprobs"].as_array_mut().into_iter().flatten() {
                        alt.as_object_mut().unwrap().remove("id");
                    }
                }
                None
            }),
        )
    };
    let (q8_no_ids, f16_no_ids) = (drop_ids(&q8.url), drop_ids(&f16.url));
    provider_verdicts(
        &pack,
        &q8_no_ids.url,
        &f16_no_ids.url,
        tmp.path(),
        "id-less",
    );

    // A proxy billing 10 % more prompt tokens than the prompt has: the billing line says so.
    let overbill = Proxy::start(
        &f16.url,
        Box::new(|_, v| {
            if let Some(n) = v["usage"]["prompt_tokens"].as_u64() {
                v["usage"]["prompt_tokens"] = serde_json::json!((n as f64 * 1.1).round() as u64);
            }
            None
        }),
    );
    let (code, r, _) = audit(&pack, &overbill.url, &tmp.path().join("overbill"), &[]);
    assert_eq!(code, 0, "billing is apart from the verdict: {r}");
    let billing = check(&r, "billing");
    assert_eq!(billing["status"], "fail", "{billing}");
    // Rounded to whole tokens, 10 % more of a ~35-token prompt is 9 to 12 % more.
    let detail = billing["detail"].as_str().unwrap();
    let over: f64 = detail
        .split("(+")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!((8.0..=13.0).contains(&over), "{billing}");

    // A proxy ignoring top_logprobs (one alternative per token): the parameter line says so.
    let one_alternative = Proxy::start(
        &f16.url,
        Box::new(|_, v| {
            for t in tokens(v) {
                if let Some(top) = t["top_logprobs"].as_array_mut() {
                    top.truncate(1);
                }
            }
            None
        }),
    );
    let (_, r, _) = audit(&pack, &one_alternative.url, &tmp.path().join("top1"), &[]);
    let params = check(&r, "parameters");
    assert_eq!(params["status"], "fail", "{params}");
    assert!(
        params["detail"].as_str().unwrap().contains("top_logprobs"),
        "{params}"
    );

    // A proxy failing one request in five with 503: the verdict is unchanged, failures counted.
    let flaky = Proxy::start(
        &q8.url,
        Box::new(|n, v| (v.is_null() && n % 5 == 2).then_some(503)),
    );
    let (code, r, err) = audit(&pack, &flaky.url, &tmp.path().join("flaky"), &[]);
    assert_eq!(code, 1, "still a mismatch: {err}");
    assert_eq!(format_verdict(&r), "mismatch");
    let transport = check(&r, "transport");
    assert_eq!(transport["status"], "fail", "{transport}");
    assert!(
        transport["detail"].as_str().unwrap().contains("5xx"),
        "{transport}"
    );

    // A pack whose references come from a second llama-server, trusted, gives the same verdicts.
    let trusted: Vec<_> = ["F32", "F16", "Q8_0", "Q4_0"]
        .iter()
        .map(|q| (q.to_lowercase(), start("avx2", q)))
        .collect();
    let endpoint_pack = tmp.path().join("endpoint-pack");
    let endpoints: Vec<(&str, String)> = trusted
        .iter()
        .map(|(format, server)| {
            let label = format!("remote-trusted/llamacpp-11434/{format}/bs1");
            (server.url.as_str(), label)
        })
        .collect();
    let built = pack_from_endpoints(&endpoint_pack, 32, &endpoints);
    assert_eq!(built.code, 0, "{}", built.stderr);
    assert!(
        built.stdout.contains("trusted endpoint"),
        "{}",
        built.stdout
    );
    provider_verdicts(&endpoint_pack, &q8.url, &f16.url, tmp.path(), "trusted");
}

#[test]
fn an_altered_pack_and_a_pack_for_another_model_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("pack");
    hspi_pack::copy_tree(&shipped_pack(), &copy, &|_| false).unwrap();
    let records = std::fs::read_dir(copy.join("references"))
        .unwrap()
        .map(|e| e.unwrap().path().join("records"))
        .find(|p| p.exists())
        .unwrap();
    let shard = std::fs::read_dir(&records)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&shard, bytes).unwrap();
    let name = shard
        .strip_prefix(&copy)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let r = run(&["pack", "verify", copy.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(&name), "names {name}: {}", r.stderr);
    // The audit refuses it before any request.
    let r = run(&[
        "audit",
        "--endpoint",
        "http://127.0.0.1:9/v1/chat/completions",
        "--pack",
        copy.to_str().unwrap(),
        "--claim",
        CLAIM,
        "--out",
        tmp.path().join("a").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(&name), "{}", r.stderr);

    let r = run(&[
        "audit",
        "--endpoint",
        "http://127.0.0.1:9/v1/chat/completions",
        "--pack",
        shipped_pack().to_str().unwrap(),
        "--model",
        "tinyllama-1.1b",
        "--claim",
        CLAIM,
        "--out",
        tmp.path().join("b").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("smollm2") && r.stderr.contains("tinyllama-1.1b"),
        "names both models: {}",
        r.stderr
    );
}

#[test]
fn an_installed_pack_is_listed_and_found_by_model() {
    let cache = tempfile::tempdir().unwrap();
    let hspi_in = |args: &[&str]| {
        let out = hspi()
            .env("HSPI_CACHE", cache.path())
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, _) = hspi_in(&["pack", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("no packs installed"), "{out}");
    let (code, _, err) = hspi_in(&["pack", "install", shipped_pack().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = hspi_in(&["pack", "list"]);
    assert!(
        out.contains("smollm2-llamacpp") && out.contains("cpu-avx512/llamacpp-11434/q8_0/bs1"),
        "{out}"
    );
    // --model finds it; the endpoint is down, so the audit fails on transport, not on the pack.
    let (code, _, err) = hspi_in(&[
        "audit",
        "--endpoint",
        "http://127.0.0.1:9/v1/chat/completions",
        "--model",
        "SmolLM2-135M-Instruct",
        "--claim",
        CLAIM,
        "--retries",
        "0",
        "--draw",
        "2",
        "--out",
        cache.path().join("a").to_str().unwrap(),
    ]);
    assert!(
        err.contains("smollm2-llamacpp@"),
        "found the installed pack: {err}"
    );
    assert_eq!(
        code, 3,
        "no answer: inconclusive, the failures counted: {err}"
    );
    let (code, _, err) = hspi_in(&[
        "audit",
        "--endpoint",
        "http://127.0.0.1:9/v1/chat/completions",
        "--model",
        "llama-3",
        "--claim",
        CLAIM,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("no installed pack for model llama-3"), "{err}");
}

/// `pack build --formats` with router words: `int4` is llama.cpp's Q4_0 and the market's INT4
/// W4A16 (group 64) computed by hspi's own engine as vLLM computes it, each a platform of the
/// pack with every pool prompt, for a model named as the user names it (not one of the zoo's);
/// a word no engine here computes is refused by name.
#[test]
fn a_pack_builds_a_router_words_formats_on_llama_cpp_and_hspis_own_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("pack");
    // A model the zoo does not know by name: its weights are what the user gives.
    let gguf = common::llama::smollm2_gguf();
    let build = |formats: &str| {
        run(&[
            "pack",
            "build",
            "--model",
            "my-llama",
            "--gguf",
            gguf.to_str().unwrap(),
            "--formats",
            formats,
            "--count",
            "3",
            "--out",
            out.to_str().unwrap(),
            "--force",
        ])
    };
    let r = build("fp6");
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("fp6"), "{}", r.stderr);
    let r = build("int4");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("pack.json")).unwrap()).unwrap();
    let platforms: Vec<(String, u64, String)> = manifest["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["platform"].as_str().unwrap().to_string(),
                p["probes"].as_u64().unwrap(),
                p["source"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(platforms.len(), 2, "{platforms:?}");
    assert!(platforms.iter().all(|p| p.1 == 3), "{platforms:?}");
    assert!(platforms
        .iter()
        .any(|p| p.0.contains("/llamacpp-") && p.0.contains("/q4_0/")));
    assert!(platforms.iter().any(|p| p.0.contains("/candle-")
        && p.0.contains("/int4-w4a16-g64/")
        && p.2.contains("hspi's own engine")));
    assert_eq!(manifest["model"]["id"], "my-llama");
    ok(&["pack", "verify", out.to_str().unwrap()]);

    // A platform computed again (an engine fixed) replaces its references with --replace;
    // without it the new dataset joins the old one.
    let refs = out.join("references");
    let q4_0 = std::fs::read_dir(&refs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("q4_0"))
        .unwrap();
    let again = tmp.path().join("q4_0-again");
    copy_dir(&q4_0, &again);
    let dirs = || std::fs::read_dir(&refs).unwrap().count();
    let (pack, a) = (out.to_str().unwrap(), again.to_str().unwrap());
    let r = run(&["pack", "merge", pack, a, "--replace"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("replaced: references/"), "{}", r.stderr);
    assert_eq!(dirs(), 2);
    let r = run(&["pack", "merge", pack, a]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(dirs(), 3);
    // Two new datasets of one platform (shards) replace the pack's two, and both stay.
    let shard = tmp.path().join("q4_0-shard");
    copy_dir(&q4_0, &shard);
    let r = run(&[
        "pack",
        "merge",
        pack,
        a,
        shard.to_str().unwrap(),
        "--replace",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("replaced: references/").count(),
        2,
        "{}",
        r.stderr
    );
    assert_eq!(dirs(), 3);
    ok(&["pack", "verify", pack]);
}

/// A claim that leaves every part open, or names only values no reference of the pack has, is
/// refused before any answer is weighed, each with its own reason.
#[test]
fn a_claim_with_nothing_to_check_is_refused_with_its_reason() {
    let served = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/atlas/vllm-cpu/f32-unseen");
    let verify = |claim: &str| verify_with_shipped_pack(&served, claim, &[]);
    let open = verify("*/*/*/*");
    assert_eq!(open.code, 2, "{}", open.stderr);
    assert!(
        open.stderr.contains("names nothing to check"),
        "{}",
        open.stderr
    );
    assert!(open.stderr.contains("hint: "), "{}", open.stderr);
    let unknown = verify("*/*/fp8-e5m2/*");
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown
            .stderr
            .contains("matches no platform the model knows"),
        "{}",
        unknown.stderr
    );
}

/// `from` and everything under it, copied to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// The shipped packs' references from hspi's own engine are what today's code computes, bit for
/// bit: each computed again on its own answers' tokens (`dataset references`, teacher forcing,
/// which equals step-by-step decoding bit for bit) and compared record for record (`dataset
/// diff`). A change to the served path that moves any value leaves a shipped pack stale (the
/// SmolLM2 pack's market references were, until 2026-11-28: 0 of 108 outputs identical); it
/// fails here until the pack is built again. The bits do not depend on the host: hspi's float
/// product sums in one order on every CPU, and exp and log are glibc's one FMA path on every
/// x86-64 CPU the suite runs on (its llama.cpp build needs AVX2, and so FMA).
#[test]
fn the_shipped_packs_own_engine_references_are_what_hspi_computes_today() {
    let _cores = common::one_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let packs = [
        (
            shipped_pack(),
            common::llama::smollm2_gguf(),
            REPRODUCED_SMOLLM2,
        ),
        (common::gemma_pack(), common::gemma_gguf(), REPRODUCED_GEMMA),
    ];
    for (pack, weights, formats) in packs {
        for format in formats {
            let reference = pack_references(&pack)
                .into_iter()
                .find(|d| {
                    let name = d.file_name().unwrap().to_string_lossy().into_owned();
                    name.contains("_candle-") && name.ends_with(&format!("_{format}_bs1"))
                })
                .unwrap_or_else(|| {
                    panic!(
                        "{}: no {format} reference of hspi's own engine",
                        pack.display()
                    )
                });
            let again = tmp.path().join(format!(
                "{}-{format}",
                pack.file_name().unwrap().to_string_lossy()
            ));
            ok(&[
                "dataset",
                "references",
                reference.to_str().unwrap(),
                "--weights",
                weights.to_str().unwrap(),
                "--formats",
                format,
                "--out",
                again.to_str().unwrap(),
            ]);
            let diff = run(&[
                "dataset",
                "diff",
                reference.to_str().unwrap(),
                again.to_str().unwrap(),
            ]);
            assert_eq!(
                diff.code,
                0,
                "{}: its {format} references are not what hspi computes today; build them again \
                 (hspi pack build … --formats {format}, then hspi pack merge PACK NEW --replace):\n{}{}",
                pack.display(),
                diff.stdout,
                diff.stderr
            );
        }
    }
}

/// The formats whose shipped references the test above computes again: float, weight-only and
/// activation-quantised schemes (each pack's every format would take ~ minutes more).
const REPRODUCED_SMOLLM2: &[&str] = &["bf16", "int8-w8a8", "nvfp4-w4a4"];
const REPRODUCED_GEMMA: &[&str] = &["bf16"];
