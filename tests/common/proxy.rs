//! A proxy in front of a real server that rewrites its answers or fails some requests: a
//! provider breaking the API contract in one known way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What the proxy does to the n-th request (0-based): answer with this status, or forward it
/// and rewrite the JSON answer.
pub type Rewrite = dyn Fn(usize, &mut serde_json::Value) -> Option<u16> + Send + Sync;

pub struct Proxy {
    pub url: String,
    pub requests: Arc<AtomicUsize>,
}

impl Proxy {
    pub fn start(upstream: &str, rewrite: Box<Rewrite>) -> Proxy {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let upstream = upstream.to_string();
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        std::thread::spawn(move || {
            let client = reqwest::blocking::Client::new();
            for mut req in server.incoming_requests() {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let mut body = String::new();
                let _ = std::io::Read::read_to_string(req.as_reader(), &mut body);
                let mut probe = serde_json::Value::Null;
                if let Some(status) = rewrite(n, &mut probe) {
                    let _ = req.respond(
                        tiny_http::Response::from_string("{\"error\":\"overloaded\"}")
                            .with_status_code(status),
                    );
                    continue;
                }
                let answer = client
                    .post(format!("{upstream}{}", req.url()))
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .and_then(|r| r.text())
                    .unwrap_or_default();
                let mut v: serde_json::Value = serde_json::from_str(&answer).unwrap_or_default();
                let _ = rewrite(n, &mut v);
                let header =
                    tiny_http::Header::from_bytes("content-type", "application/json").unwrap();
                let out = serde_json::to_string(&v).unwrap();
                let _ = req.respond(tiny_http::Response::from_string(out).with_header(header));
            }
        });
        Proxy { url, requests }
    }
}
