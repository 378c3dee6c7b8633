//! Reports and evidence bundles from a real audit (the demo's loopback provider): Markdown and
//! JSON pinned by snapshots, HTML rendered by headless Chromium with no console message and no
//! network request, PDF rendered by pdftoppm, and a bundle that fails verification when one
//! byte changes.

mod common;

use std::process::Command;
use std::sync::Arc;

use common::*;

fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", "[date]"),
        (r#""created_unix": \d+"#, r#""created_unix": "[unix]""#),
        (r"127\.0\.0\.1:\d+", "127.0.0.1:[port]"),
        (r"/tmp/[^ `\n)\x22|]+", "[path]"),
        (r"cpu-[a-z0-9]+/", "cpu-ISA/"),
        (r#""cpu-[a-z0-9]+""#, r#""cpu-ISA""#),
        (r"hspi \d+\.\d+\.\d+", "hspi [version]"),
        (r"[Cc]lassifier `?[0-9a-f]{16}`?", "classifier [id]"),
        (
            r#""classifier_id": "[0-9a-f]{16}""#,
            r#""classifier_id": "[id]""#,
        ),
        (r#""id": "[0-9a-f]{16}""#, r#""id": "[id]""#),
    ]
}

fn tool(name: &str) -> String {
    for candidate in [name.to_string(), format!("/usr/bin/{name}")] {
        if Command::new(&candidate).arg("--version").output().is_ok() {
            return candidate;
        }
    }
    panic!("{name} is not installed: run .ci/setup (it installs chromium and poppler-utils)");
}

#[test]
fn audit_reports_render_and_bundles_detect_any_changed_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    ok(&["demo", "--out", demo.to_str().unwrap()]);
    let audit = demo.join("audit-f32");
    let json_path = audit.join("audit.json");
    let json = std::fs::read_to_string(&json_path).unwrap();
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["schema"], "hspi-report/1");
    assert_eq!(report["summary"]["verdict"], "mismatch");

    // Markdown and JSON, pinned.
    let md_path = tmp.path().join("report.md");
    ok(&[
        "report",
        "--from",
        json_path.to_str().unwrap(),
        "--format",
        "md",
        "--out",
        md_path.to_str().unwrap(),
    ]);
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(md.starts_with("# hspi report:"), "{md}");
    let again = tmp.path().join("again.json");
    ok(&[
        "report",
        "--from",
        json_path.to_str().unwrap(),
        "--format",
        "json",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read_to_string(&again).unwrap(),
        json,
        "json round-trips"
    );
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("audit_markdown", md);
        insta::assert_snapshot!("audit_json", json);
    });

    // HTML in headless Chromium: every request goes to a proxy that counts them.
    let html = tmp.path().join("report.html");
    ok(&[
        "report",
        "--from",
        json_path.to_str().unwrap(),
        "--format",
        "html",
        "--out",
        html.to_str().unwrap(),
    ]);
    let proxy = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let proxy_addr = proxy.server_addr().to_ip().unwrap();
    let requests = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let counted = requests.clone();
    std::thread::spawn(move || {
        for r in proxy.incoming_requests() {
            counted.lock().unwrap().push(r.url().to_string());
            let _ = r.respond(tiny_http::Response::empty(502));
        }
    });
    let shot = tmp.path().join("shot.png");
    let out = Command::new(tool("chromium"))
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--proxy-server=http://{proxy_addr}"))
        .args([
            "--proxy-bypass-list=<-loopback>",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!(
            "--user-data-dir={}",
            tmp.path().join("chrome").display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .args(["--window-size=1000,1400"])
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    assert!(!log.contains("CONSOLE"), "console messages: {log}");
    // Chromium's own service traffic (updates, time, accounts) goes to Google hosts even with
    // background networking off; anything else would come from the page.
    let own = ["google.com", "googleapis.com", "gvt1.com", "gstatic.com"];
    let seen: Vec<String> = requests
        .lock()
        .unwrap()
        .iter()
        .filter(|u| {
            let host = u
                .trim_start_matches("http://")
                .split(['/', ':'])
                .next()
                .unwrap_or("");
            !own.iter()
                .any(|o| host == *o || host.ends_with(&format!(".{o}")))
        })
        .cloned()
        .collect();
    assert!(
        seen.is_empty(),
        "the report made network requests: {seen:?}"
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot of {} bytes",
        png.len()
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("id=\"summary\"") && page.contains("<svg"),
        "summary and charts"
    );
    // The verdict per claimed dimension, pinned as the HTML shows it.
    let start = page
        .find("<h3>Per claimed dimension</h3>")
        .expect("per-dimension table");
    let end = start + page[start..].find("</table>").unwrap() + "</table>".len();
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("audit_html_dimensions", &page[start..end]);
    });
    for external in ["src=", "href=", "url(", "<script", "<link", "@import"] {
        assert!(!page.contains(external), "the HTML references {external}");
    }

    // PDF through poppler.
    let pdf = tmp.path().join("report.pdf");
    ok(&[
        "report",
        "--from",
        json_path.to_str().unwrap(),
        "--format",
        "pdf",
        "--out",
        pdf.to_str().unwrap(),
    ]);
    assert_pdf_opens_cleanly(&pdf);
    let prefix = tmp.path().join("page");
    let r = Command::new(tool("pdftoppm"))
        .args(["-png", "-r", "50", "-f", "1", "-l", "1"])
        .arg(&pdf)
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let rendered = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| {
            e.file_name().to_string_lossy().starts_with("page")
                && e.path().extension().is_some_and(|x| x == "png")
        });
    assert!(rendered, "pdftoppm wrote no page");
    // Typeset: the title first, then the verdict; tables with aligned columns (pdftotext
    // -layout keeps a row's cells on one line).
    let text = Command::new("pdftotext")
        .args(["-layout"])
        .arg(&pdf)
        .arg("-")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let mut first = text.lines().map(str::trim).filter(|l| !l.is_empty());
    assert!(
        first.next().unwrap().starts_with("hspi report: http://"),
        "{text}"
    );
    assert_eq!(first.next(), Some("MISMATCH"), "{text}");
    assert!(
        text.contains("mismatch") && text.contains("*/candle/f32/*"),
        "{text}"
    );
    assert!(
        text.contains("Per claimed dimension")
            && text
                .lines()
                .any(|l| l.split_whitespace().take(2).eq(["format", "mismatch"])),
        "{text}"
    );

    // A signed bundle of the answers, probe set and report; one changed byte is named.
    let key = tmp.path().join("signing.key");
    let public = ok(&["bundle", "keygen", "--out", key.to_str().unwrap()])
        .stdout
        .trim()
        .to_string();
    let bundle = tmp.path().join("bundle");
    ok(&[
        "bundle",
        "sign",
        audit.to_str().unwrap(),
        pdf.to_str().unwrap(),
        "--out",
        bundle.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    let r = ok(&[
        "bundle",
        "verify",
        bundle.to_str().unwrap(),
        "--public-key",
        &public,
    ]);
    assert!(r.stdout.contains("verified"), "{}", r.stdout);
    let journal = bundle.join("files/audit-f32/journal.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&journal, &bytes).unwrap();
    let r = run(&["bundle", "verify", bundle.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("files/audit-f32/journal.jsonl was altered"),
        "{}",
        r.stderr
    );
}
