//! What watching costs: `hspi watch` over three real llama-servers (SmolLM2 at F16, Q8_0 and
//! Q4_0, all claimed F16, the shipped pack) for a few rounds on loopback. Prints, per provider,
//! the requests, output tokens, charges (at an example price of 0.15 / 0.60 per million input /
//! output tokens) and wall time of one round's audit, as a table and as JSON.
//! `cargo bench --bench watch` (needs `.ci/setup`'s llama.cpp build and SmolLM2 quants).

#[path = "../tests/common/mod.rs"]
mod common;

use common::llama::start;

const ROUNDS: u32 = 5;

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("watch");
    let servers = [
        ("F16", start("avx2", "F16")),
        ("Q8_0", start("avx2", "Q8_0")),
        ("Q4_0", start("avx2", "Q4_0")),
    ];
    let pack = common::shipped_pack();
    let mut args: Vec<String> = [
        "watch",
        "--pack",
        pack.to_str().unwrap(),
        "--claim",
        "*/llamacpp/f16/*",
        "--rounds",
        &ROUNDS.to_string(),
        "--every",
        "0",
        "--seed",
        "1",
        "--price-input",
        "0.15",
        "--price-output",
        "0.60",
        "--out",
        dir.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    for (q, s) in &servers {
        args.push("--provider".into());
        args.push(format!("{q}={}", s.chat_url()));
    }
    let r = common::run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let records: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("rounds.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    println!("| provider (served, F16 claimed) | requests / round | output tokens / round | cost / round | seconds / round (median, max) |");
    println!("|---|---|---|---|---|");
    let mut json = Vec::new();
    for (q, _) in &servers {
        let mine: Vec<&serde_json::Value> =
            records.iter().filter(|r| r["provider"] == *q).collect();
        let n = mine.len() as f64;
        let sum =
            |f: &dyn Fn(&serde_json::Value) -> f64| mine.iter().map(|r| f(r)).sum::<f64>() / n;
        let requests = sum(&|r| r["outcome"]["requests"].as_f64().unwrap());
        let tokens = sum(&|r| r["outcome"]["output_tokens"].as_f64().unwrap());
        let cost = sum(&|r| r["outcome"]["cost"].as_f64().unwrap());
        let mut secs: Vec<f64> = mine
            .iter()
            .map(|r| r["seconds"].as_f64().unwrap())
            .collect();
        secs.sort_by(f64::total_cmp);
        let (median, max) = (secs[secs.len() / 2], secs[secs.len() - 1]);
        println!("| {q} | {requests:.1} | {tokens:.1} | {cost:.8} | {median:.2}, {max:.2} |");
        json.push(
            serde_json::json!({"provider": q, "rounds": mine.len(), "requests": requests,
            "output_tokens": tokens, "cost": cost, "seconds_median": median, "seconds_max": max}),
        );
    }
    println!("{}", serde_json::json!({ "watch_cost_per_round": json }));
}
