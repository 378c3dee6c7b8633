//! Mixed routing: a provider sending a share of its requests to a cheaper deployment behind an
//! honest F16 llama-server. Fresh answers of llama-servers at F16, Q4_0 and Q8_0 with hspi's
//! references on their tokens, replayed as such a provider would answer (`verify --audits
//! --routed DIR=SHARE`: each request answered from the cheaper server's answers with that
//! probability): 10 % and 30 % routed to Q4_0 and 10 % to Q8_0 named "mixed" with the share's
//! interval, honest servers never mixed; and one live fresh-prompt audit through a proxy routing
//! every third request of ten to Q4_0, whose references computed again afterwards, one format
//! per run (`hspi dataset references`), equal the audit's and weigh its answers to the same
//! verdict. The guide states the figures (docs/how-hspi-decides.md#fig-mixed-routing).

mod common;

use std::path::{Path, PathBuf};

use common::fresh::{accusations, verdicts};
use common::llama;
use common::router::Router;
use common::{assert_stated, assert_stated_live};
use hspi_datasets::NumericFormat;

/// The formats hspi computes references at: the claim's and both cheaper ones.
const FORMATS: &str = "f16,q8_0,q4_0";
/// Fresh answers of the honest server, and of each cheaper one.
const HONEST_ANSWERS: usize = 96;
const CHEAP_ANSWERS: usize = 32;
/// The budget of each replayed audit: 100 answers of 8 tokens.
const BUDGET: &str = "800";
/// The least share routed elsewhere the audits are asked to see (`--routed-share`).
const SHARE_CHECKED: &str = "0.1";
const F16: &str = "*/*/f16/*";

fn formats() -> Vec<NumericFormat> {
    FORMATS.split(',').map(|f| f.parse().unwrap()).collect()
}

/// A llama-server at `quant`'s fresh answers and their references, in `out`.
fn answers(quant: &str, seed: u64, count: usize, out: &Path) -> (PathBuf, PathBuf) {
    let s = llama::start("avx2", quant);
    common::fresh::answers_with_references(&s.url, seed, count, &formats(), &out.join(quant))
}

/// 200 replayed audits of `claim` over `answers` (with `routed` = (DIR, SHARE) answering that
/// share of the requests), references `refs`, asked to see a tenth routed elsewhere.
fn replayed(
    answers: &Path,
    refs: &[&Path],
    claim: &str,
    routed: Option<(&Path, f64)>,
) -> serde_json::Value {
    let mut args: Vec<String> = vec!["verify".into(), answers.display().to_string()];
    args.push("--references".into());
    args.extend(refs.iter().map(|r| r.display().to_string()));
    for a in [
        "--claim",
        claim,
        "--audits",
        "200",
        "--max-queries",
        "200",
        "--max-tokens-total",
        BUDGET,
        "--routed-share",
        SHARE_CHECKED,
        "--json",
    ] {
        args.push(a.into());
    }
    if let Some((dir, share)) = routed {
        args.push("--routed".into());
        args.push(format!("{}={share}", dir.display()));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = common::ok(&args);
    serde_json::from_str(&r.stdout).unwrap()
}

fn covering(tally: &serde_json::Value) -> u64 {
    tally["mixed_covering"].as_u64().unwrap()
}

#[test]
fn a_share_routed_to_a_cheaper_format_is_named_mixed_and_honest_servers_never() {
    let tmp = tempfile::tempdir().unwrap();
    let (f16, f16_refs) = answers("F16", 61, HONEST_ANSWERS, tmp.path());
    let (q4, q4_refs) = answers("Q4_0", 62, CHEAP_ANSWERS, tmp.path());
    let (q8, q8_refs) = answers("Q8_0", 63, CHEAP_ANSWERS, tmp.path());
    let both_q4: [&Path; 2] = [&f16_refs, &q4_refs];
    let both_q8: [&Path; 2] = [&f16_refs, &q8_refs];

    // Honest servers: never mixed, never accused; F16 consistent once it has answered enough
    // to have shown a tenth routed elsewhere.
    let honest = replayed(&f16, &[&f16_refs], F16, None);
    assert_eq!(accusations(&honest), 0, "{honest}");
    assert_stated(
        "honest F16, consistent",
        verdicts(&honest, "consistent"),
        200,
    );
    for (dir, refs, claim) in [(&q4, &q4_refs, "*/*/q4_0/*"), (&q8, &q8_refs, "*/*/q8_0/*")] {
        let t = replayed(dir, &[refs], claim, None);
        assert_eq!(accusations(&t), 0, "{claim}: {t}");
    }

    // A share routed elsewhere, claimed f16: named mixed, the share's interval covering it.
    let cases = [
        ("10 % routed to Q4_0", &q4, &both_q4, 0.1, 200),
        ("30 % routed to Q4_0", &q4, &both_q4, 0.3, 200),
        ("10 % routed to Q8_0", &q8, &both_q8, 0.1, 200),
    ];
    for (what, routed, refs, share, mixed) in cases {
        let t = replayed(&f16, refs, F16, Some((routed, share)));
        let named = verdicts(&t, "mixed");
        eprintln!("{what}: mixed {named}, covering {}", covering(&t));
        assert_stated_live(&format!("{what}, mixed"), named, mixed);
        assert_eq!(verdicts(&t, "consistent"), 0, "{what}: {t}");
        // The bar: mixed, the interval covering the share, in 95 % of all audits.
        assert!(
            covering(&t) >= 190,
            "{what}: the interval covers the share in {} of 200 audits ({named} mixed)",
            covering(&t)
        );
    }

    // One live audit: a proxy in front of the honest server sends requests 1, 4 and 7 of every
    // ten to Q4_0; the fresh-prompt audit names the mixture and the share.
    let servers = (llama::start("avx2", "F16"), llama::start("avx2", "Q4_0"));
    let (honest, cheap) = (servers.0.url.clone(), servers.1.url.clone());
    let proxy = Router::start(Box::new(move |n, _| {
        if matches!(n % 10, 1 | 4 | 7) {
            cheap.clone()
        } else {
            honest.clone()
        }
    }));
    let w = llama::smollm2_gguf();
    let (code, report, err) = common::pack_audit(
        &common::shipped_pack(),
        &proxy.url,
        F16,
        &tmp.path().join("live"),
        &[
            "--weights",
            w.to_str().unwrap(),
            "--fresh-formats",
            FORMATS,
            "--draw-seed",
            "5",
            "--max-queries",
            "60",
            "--max-tokens-total",
            "480",
        ],
    );
    assert_eq!(code, 1, "a mixture is an accusation: {err}");
    let verdict = &report["evidence"]["verification"]["verdict"];
    assert_eq!(verdict["verdict"], "mixed", "{verdict}");
    let routes = verdict["routes"].as_array().unwrap();
    let cheap_route = routes
        .iter()
        .find(|r| r["format"] == "q4_0")
        .unwrap_or_else(|| panic!("no q4_0 route: {verdict}"));
    assert!(
        cheap_route["low"].as_f64().unwrap() <= 0.3 && cheap_route["high"].as_f64().unwrap() >= 0.3,
        "{cheap_route}"
    );
    let summary = report["summary"].to_string();
    assert!(summary.contains("q4_0"), "{summary}");

    // The same references computed after the audit, one format per run (as a cluster's array
    // would): bit for bit the audit's own, and the answers weighed on them alone are mixed again.
    let live = tmp.path().join("live");
    let later = |formats: &str, dir: &Path| {
        common::ok(&[
            "dataset",
            "references",
            live.to_str().unwrap(),
            "--weights",
            w.to_str().unwrap(),
            "--formats",
            formats,
            "--out",
            dir.to_str().unwrap(),
        ]);
    };
    let mut dirs = Vec::new();
    for format in FORMATS.split(',') {
        let dir = tmp.path().join(format!("later-{format}"));
        later(format, &dir);
        dirs.push(dir.display().to_string());
    }
    let all = tmp.path().join("later-all");
    later(FORMATS, &all);
    common::ok(&[
        "dataset",
        "diff",
        live.join("references").to_str().unwrap(),
        all.to_str().unwrap(),
    ]);
    let mut args = vec!["verify", live.to_str().unwrap(), "--references"];
    args.extend(dirs.iter().map(String::as_str));
    args.extend([
        "--claim",
        F16,
        "--max-queries",
        "60",
        "--max-tokens-total",
        "480",
        "--json",
    ]);
    let again = common::run(&args);
    let again: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(
        again["verdict"]["verdict"], "mixed",
        "weighed again: {again}"
    );
}
