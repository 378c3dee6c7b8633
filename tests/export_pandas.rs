//! pandas reads hspi's exports with no hspi code, and the bits survive.

mod common;

use common::*;

const CHECK: &str = r#"
import sys, numpy as np, pandas as pd
path, kind, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
df = pd.read_parquet(path) if kind == "parquet" else pd.read_csv(path)
assert len(df) == rows, (len(df), rows)
for col in ["probe_id", "target", "platform", "argmax", "out_0", "out_9_bits"]:
    assert col in df.columns, col
vals = df[[f"out_{i}" for i in range(10)]].to_numpy(dtype=np.float32)
bits = df[[f"out_{i}_bits" for i in range(10)]].to_numpy(dtype=np.int64).astype(np.uint32)
assert (vals.view(np.uint32) == bits).all(), "values and bit columns disagree"
assert (vals.argmax(axis=1) == df["argmax"].to_numpy()).all()
print(df["platform"].nunique(), "platforms")
"#;

#[test]
fn pandas_reads_csv_and_parquet_exports_with_exact_bits() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("d");
    assert_eq!(collect_cnn(&out, "12", &["--platforms", "candle"]).code, 0);
    for kind in ["csv", "parquet"] {
        let file = tmp.path().join(format!("records.{kind}"));
        ok(&[
            "dataset",
            "export",
            out.to_str().unwrap(),
            "--format",
            kind,
            "--out",
            file.to_str().unwrap(),
        ]);
        let py = std::process::Command::new("python3")
            .args(["-c", CHECK, file.to_str().unwrap(), kind, "36"])
            .output()
            .expect("python3 runs (install it with the test prerequisites: .ci/setup)");
        assert!(
            py.status.success(),
            "pandas could not read the {kind} export (prerequisites: .ci/setup):\n{}",
            String::from_utf8_lossy(&py.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&py.stdout).trim(), "3 platforms");
    }
}

#[test]
fn an_unknown_export_format_is_an_error() {
    let r = run(&[
        "dataset",
        "export",
        "/nonexistent",
        "--format",
        "xlsx",
        "--out",
        "/tmp/x",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("unknown export format 'xlsx'"),
        "{}",
        r.stderr
    );
}
