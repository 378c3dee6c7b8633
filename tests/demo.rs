//! `hspi demo` is the README's first command: it must work on a fresh machine with no network.

mod common;

use common::*;

#[test]
fn demo_runs_the_grid_and_an_audited_loopback_endpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let r = ok(&["demo", "--out", tmp.path().to_str().unwrap()]);
    assert!(
        r.stdout.contains("EQCs over 26 platforms, 64 probes"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("64 generated tokens with top-5 logprobs, 64 of them exact f32"),
        "{}",
        r.stdout
    );
    // The demo audits its own loopback provider (serving bf16): a false claim is caught, the
    // true one holds.
    assert!(
        r.stdout
            .contains("claiming */candle/f32/*: mismatch — most likely serving cpu-avx2/candle-0.11.1/bf16/bs1")
            || r.stdout.contains("claiming */candle/f32/*: mismatch — most likely serving cpu-avx512/candle-0.11.1/bf16/bs1"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("claiming */candle/bf16/*: consistent"),
        "{}",
        r.stdout
    );
    ok(&[
        "dataset",
        "verify",
        tmp.path().join("cnn").to_str().unwrap(),
    ]);
    ok(&[
        "dataset",
        "verify",
        tmp.path().join("served").to_str().unwrap(),
    ]);
}
