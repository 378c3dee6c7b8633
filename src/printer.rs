//! Where output goes: data on stdout, progress and diagnostics on stderr.

use std::io::Write;

pub fn data(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
}

/// A result on stdout: pretty JSON when asked for, else its text form.
pub fn json_or<T: serde::Serialize>(
    json: bool,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    data(&if json {
        serde_json::to_string_pretty(value)?
    } else {
        text(value)
    });
    Ok(())
}

pub fn status(text: &str) {
    eprintln!("{text}");
}

pub fn error(e: &anyhow::Error) {
    let mut msg = format!("error: {e}");
    for cause in e.chain().skip(1) {
        msg.push_str(&format!("\n  caused by: {cause}"));
    }
    eprintln!("{msg}");
}

/// A library workflow's lines, routed here.
pub fn lines() -> hspi_audit::Lines<'static> {
    hspi_audit::Lines {
        data: &data,
        status: &status,
    }
}
