//! A provider in front of real servers that rewrites each request and chooses which server
//! answers it: one that recognises a public audit pool, or one that samples whatever was asked.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// For the n-th request (0-based) and its JSON body (rewritable): the base URL that answers it.
pub type Route = dyn Fn(usize, &mut serde_json::Value) -> String + Send + Sync;

pub struct Router {
    pub url: String,
    pub requests: Arc<AtomicUsize>,
}

impl Router {
    pub fn start(route: Box<Route>) -> Router {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let url = format!("http://{}", server.server_addr().to_ip().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        std::thread::spawn(move || {
            let client = reqwest::blocking::Client::new();
            for mut req in server.incoming_requests() {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let mut body = String::new();
                let _ = std::io::Read::read_to_string(req.as_reader(), &mut body);
                let mut request: serde_json::Value =
                    serde_json::from_str(&body).unwrap_or_default();
                let upstream = route(n, &mut request);
                let answer = client
                    .post(format!("{upstream}{}", req.url()))
                    .header("content-type", "application/json")
                    .body(request.to_string())
                    .send()
                    .and_then(|r| r.text())
                    .unwrap_or_default();
                let header =
                    tiny_http::Header::from_bytes("content-type", "application/json").unwrap();
                let _ = req.respond(tiny_http::Response::from_string(answer).with_header(header));
            }
        });
        Router { url, requests }
    }
}

/// The last user message of a chat request (or a completion's prompt).
pub fn prompt_of(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .or_else(|| request["prompt"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// A provider holding the shipped pack: its pool's prompts go to `honest`, every other prompt to
/// `cheap`.
pub fn pool_aware(honest: &str, cheap: &str) -> Router {
    let pool: std::collections::HashSet<String> =
        hspi_probe::read_probe_set(&super::shipped_pack().join("pool.json"))
            .unwrap()
            .probes
            .iter()
            .map(|p| match &p.input {
                hspi_datasets::ProbeInput::Prompt { text, .. } => text.clone(),
                _ => String::new(),
            })
            .collect();
    let (honest, cheap) = (honest.to_string(), cheap.to_string());
    Router::start(Box::new(move |_, request| {
        if pool.contains(&prompt_of(request)) {
            honest.clone()
        } else {
            cheap.clone()
        }
    }))
}
