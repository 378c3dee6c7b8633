//! White-box classification on the CNN's CPU grid: train on one probe set, test on another
//! (never seen in training), through `hspi eval`, `train` and `identify`.

mod common;

use common::*;

fn probes(dir: &std::path::Path, name: &str, seed: &str) -> String {
    let p = dir.join(name);
    ok(&[
        "probe",
        "random",
        "--count",
        "60",
        "--seed",
        seed,
        "--out",
        p.to_str().unwrap(),
    ]);
    p.to_str().unwrap().to_string()
}

#[test]
fn white_box_identifies_every_class_on_unseen_probes_and_flags_held_out_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let train = tmp.path().join("train");
    let test = tmp.path().join("test");
    assert_eq!(
        collect_cnn(&train, &probes(tmp.path(), "p1.json", "1"), &[]).code,
        0
    );
    assert_eq!(
        collect_cnn(&test, &probes(tmp.path(), "p2.json", "2"), &[]).code,
        0
    );
    let (train, test) = (train.to_str().unwrap(), test.to_str().unwrap());

    let r = ok(&[
        "eval",
        "--json",
        "--train",
        train,
        "--test",
        test,
        "--alphas",
        "1",
        "--queries",
        "1,10",
        "--held-out",
        "3",
    ]);
    let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let at = |scores: &serde_json::Value, n: u64| {
        scores["by_queries"]["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0] == n)
            .map(|p| p[1].as_f64().unwrap())
            .unwrap()
    };
    assert_eq!(
        report["test_probes_seen"], 0,
        "a fair test uses unseen probes"
    );
    assert_eq!(report["classes"].as_array().unwrap().len(), 25);
    let hspi = &report["hspi"];
    eprintln!(
        "white-box: {:.3} at 1 query, {:.3} at 10; HSPI bits baseline {:.3} / {:.3}",
        at(hspi, 1),
        at(hspi, 10),
        at(&report["baseline"], 1),
        at(&report["baseline"], 10)
    );
    assert!(at(hspi, 10) >= 0.99, "{report}");
    assert!(
        at(hspi, 1) > at(&report["baseline"], 1),
        "beats HSPI's raw bits"
    );
    assert_eq!(
        report["exact_replay"][0], report["exact_replay"][1],
        "replayed probes: exact every time"
    );
    for h in report["held_out"].as_array().unwrap() {
        let flagged = h["flagged_unknown"].as_array().unwrap()[1][1]
            .as_f64()
            .unwrap();
        assert!(
            flagged >= 0.95,
            "held-out class {} flagged {flagged}",
            h["name"]
        );
    }
    let false_alarms = report["known_flagged_unknown"][1][1].as_f64().unwrap();
    assert!(
        false_alarms <= 0.01,
        "known classes called unknown: {false_alarms}"
    );

    // With one reference (candle f32), every other class is told by how it differs from it:
    // no exact path, the classifier alone.
    let r = ok(&[
        "eval",
        "--json",
        "--train",
        train,
        "--test",
        test,
        "--alphas",
        "1",
        "--queries",
        "1,10",
        "--held-out",
        "0",
        "--features",
        "reference-relative,ulp-pattern,mantissa-histogram",
        "--reference-platforms",
        "cpu-avx2/candle-0.11.1/f32/bs1",
    ]);
    let one_ref: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    eprintln!(
        "white-box, candle f32 reference only: {:.3} at 1 query, {:.3} at 10",
        at(&one_ref["hspi"], 1),
        at(&one_ref["hspi"], 10)
    );
    assert!(
        at(&one_ref["hspi"], 10) >= 2.0 * at(&one_ref["baseline"], 10),
        "{one_ref}"
    );

    // The Markdown tables name the baseline beside hspi.
    let md = ok(&[
        "eval",
        "--train",
        train,
        "--test",
        test,
        "--alphas",
        "1",
        "--queries",
        "1",
        "--held-out",
        "0",
    ])
    .stdout;
    assert!(md.contains("| HSPI baseline | bits over logits"), "{md}");
    assert!(md.contains("| random guess |"), "{md}");

    // train + identify: a labelled test dataset is named class by class; exit 0.
    let model = tmp.path().join("model.json");
    ok(&[
        "train",
        train,
        "--alphas",
        "1",
        "-o",
        model.to_str().unwrap(),
    ]);
    let m = model.to_str().unwrap();
    let r = ok(&[
        "identify",
        "--json",
        "-m",
        m,
        test,
        "--references",
        test,
        "--queries",
        "10",
    ]);
    let ids: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let ids = ids.as_array().unwrap();
    assert_eq!(ids.len(), 26);
    let model_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    for id in ids {
        let class = id["decision"]["class"].as_str().expect("identified");
        let members = model_json["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == class)
            .unwrap()["members"]
            .clone();
        assert!(members.as_array().unwrap().contains(&id["label"]), "{id}");
        assert_eq!(
            id["method"], "reference-match",
            "bit-identical to its own recomputation"
        );
    }

    // A model file altered after training is refused, and so is no reference at all.
    let text = std::fs::read_to_string(&model).unwrap();
    let altered = tmp.path().join("altered.json");
    std::fs::write(&altered, text.replacen("\"alpha\":1.0", "\"alpha\":2.0", 1)).unwrap();
    let r = run(&["identify", "-m", altered.to_str().unwrap(), test]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("altered"), "{}", r.stderr);
    // Records of another model, or a corrupt shard: a clear error, no verdict.
    let lm = tmp.path().join("lm");
    ok(&[
        "collect",
        "--model",
        "tiny-lm",
        "--probes",
        "4",
        "--out",
        lm.to_str().unwrap(),
    ]);
    let r = run(&[
        "identify",
        "-m",
        m,
        lm.to_str().unwrap(),
        "--references",
        lm.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("trained on model cnn-digits"),
        "{}",
        r.stderr
    );
    let r = run(&[
        "verify",
        lm.to_str().unwrap(),
        "--classifier",
        m,
        "--claim",
        "*/candle/f32/*",
    ]);
    assert_eq!(r.code, 2, "verify refuses them too: {}", r.stdout);
    assert!(
        r.stderr.contains("trained on model cnn-digits"),
        "{}",
        r.stderr
    );
    let corrupt = tmp.path().join("corrupt");
    copy_dir(std::path::Path::new(test), &corrupt);
    let shard = corrupt.join("records/shard-000000.jsonl");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[200] = if bytes[200] == b'A' { b'B' } else { b'A' };
    std::fs::write(&shard, bytes).unwrap();
    let r = run(&[
        "identify",
        "-m",
        m,
        corrupt.to_str().unwrap(),
        "--references",
        test,
    ]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("shard-000000.jsonl"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "no verdict from a corrupt dataset");

    let r = run(&["identify", "-m", m, test]);
    assert_eq!(r.code, 4, "no references: unknown, not a guess");
    assert!(r.stdout.contains("no reference answers"), "{}", r.stdout);
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
