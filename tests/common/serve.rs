//! `hspi serve` started as a child process: a known platform on loopback, stopped when dropped.

use std::process::{Child, Command, Stdio};

/// The server and the base URL it printed (`http://127.0.0.1:PORT/v1`).
pub struct Serve(pub Child, pub String);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `hspi serve --platform PLATFORM` of the default model (the embedded tiny LM).
pub fn serve(platform: &str) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hspi"))
        .args(["serve", "--platform", platform, "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    Serve(child, line.trim().to_string())
}
